// Chunks of up to 16 bytes: V consecutive elements that a kernel reads (and
// writes) with one 16-byte access per array where the pointer allows it.
//
// Why: a thread that reads one 4-byte float per step keeps too few bytes in
// flight for HBM to stream (README.md, "Byte model and design"); one 16-byte
// load per array keeps four times as many, and as many in float as in
// double. V is chosen from the shape alone (ChunkWidth), so the host
// emulation walks the same chunks in the same order. Whether a chunk is read
// by one vector load or by V scalar loads depends on the buffers' alignment
// (checked once per launch, AllAligned) and changes no value: the bits never
// depend on where a buffer lies.
//
// No CUDA header: the host compiler builds this file for the CPU tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cuda/reduce.h"  // DDP_HD

namespace ddp::cuda {

inline constexpr int kChunkBytes = 16;

// The widest chunk of T: 4 floats, 2 doubles.
template <typename T>
constexpr int MaxChunkWidth() {
  return kChunkBytes / static_cast<int>(sizeof(T));
}

// V for chunks that must each lie inside one run of `run` contiguous
// elements (a plane, a group): the widest chunk if it divides the run, else
// 1 (one element per step, the scalar code).
template <typename T>
int ChunkWidth(int64_t run) {
  return run % MaxChunkWidth<T>() == 0 ? MaxChunkWidth<T>() : 1;
}

// Every pointer 16-byte aligned: chunks that start at a multiple of V from
// it can then be read and written as one vector.
inline bool AllAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<std::uintptr_t>(p) % kChunkBytes != 0) return false;
  }
  return true;
}

// V values; aligned as a whole so that the device reads it in one access.
template <typename T, int V>
struct alignas(V * sizeof(T)) Chunk {
  T v[V];
};

// p[0..V): one vector load on the device when `vector` (p aligned to the
// chunk), else V scalar loads. The values are the same either way.
template <int V, typename T>
DDP_HD Chunk<T, V> LoadChunk(const T* p, bool vector) {
#if defined(__CUDA_ARCH__)
  if (vector) return *reinterpret_cast<const Chunk<T, V>*>(p);
#else
  (void)vector;
#endif
  Chunk<T, V> c;
  for (int e = 0; e < V; ++e) c.v[e] = p[e];
  return c;
}

template <int V, typename T>
DDP_HD void StoreChunk(T* p, const Chunk<T, V>& c, bool vector) {
#if defined(__CUDA_ARCH__)
  if (vector) {
    *reinterpret_cast<Chunk<T, V>*>(p) = c;
    return;
  }
#else
  (void)vector;
#endif
  for (int e = 0; e < V; ++e) p[e] = c.v[e];
}

// f(std::integral_constant<int, V>) for the runtime width v, 1 or
// MaxChunkWidth<T>() (what ChunkWidth<T> gives): the kernels and the
// emulation are templates on V.
template <typename T, typename F>
void WithChunkWidth(int v, F&& f) {
  if (v == MaxChunkWidth<T>()) {
    f(std::integral_constant<int, MaxChunkWidth<T>()>{});
  } else if (v == 1) {
    f(std::integral_constant<int, 1>{});
  } else {
    throw std::invalid_argument("WithChunkWidth: width must be 1 or " + std::to_string(MaxChunkWidth<T>()) +
                                ", got " + std::to_string(v));
  }
}

}  // namespace ddp::cuda
