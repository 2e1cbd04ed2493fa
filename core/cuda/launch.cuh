// Internal to the .cu files: stream-ordered scratch memory, a grid-stride
// elementwise launcher and the two-stage segment reduction of reduce.h
// (thread bodies and grid sizing in grid_stride.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/check.h"
#include "core/cuda/chunk.h"
#include "core/cuda/grid_stride.h"
#include "core/cuda/reduce.h"

namespace ddp::cuda::internal {

// Scratch allocated and freed in stream order (no device-wide sync).
template <typename T>
class StreamScratch {
 public:
  StreamScratch(std::size_t size, cudaStream_t stream) : stream_(stream) {
    if (size > 0) DDP_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data_), size * sizeof(T), stream_));
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  // Reached with data_ set only when an exception unwinds; the throw already
  // carries the first error, so a second one here is not reported.
  ~StreamScratch() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }
  T* get() const { return data_; }
  // The normal path: free, and check that the free was accepted.
  void Release() {
    T* p = data_;
    data_ = nullptr;
    if (p != nullptr) DDP_CUDA_CHECK(cudaFreeAsync(p, stream_));
  }

 private:
  T* data_ = nullptr;
  cudaStream_t stream_;
};

// This thread's place in a one-dimensional grid (grid_stride.h).
__device__ inline Thread ThisThread() {
  return Thread{int64_t{blockIdx.x}, int64_t{blockDim.x}, int64_t{threadIdx.x}, int64_t{gridDim.x}};
}

template <typename F>
__global__ void ElementwiseKernel(int64_t total, F f) {
  ForEachStrided(ThisThread(), total, f);
}

// f(i) for every i in [0, total).
template <typename F>
void LaunchElementwise(int64_t total, F f, cudaStream_t stream) {
  if (total <= 0) return;
  ElementwiseKernel<<<GridFor(total, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(total, f);
  DDP_CUDA_CHECK(cudaGetLastError());
}

// f.ChunkAt<V>(i0) for every chunk of `total` elements (`total` a multiple
// of `width`, which is 1 or MaxChunkWidth<T>()): one chunk per thread step.
template <typename T, typename F>
void LaunchChunks(int64_t total, int width, F f, cudaStream_t stream) {
  if (total <= 0) return;
  WithChunkWidth<T>(width, [&](auto v) {
    constexpr int V = decltype(v)::value;
    const int64_t chunks = total / V;
    ElementwiseKernel<<<GridFor(chunks, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        chunks, ChunkBody<V, F>{f});
  });
  DDP_CUDA_CHECK(cudaGetLastError());
}

extern __shared__ __align__(16) unsigned char ddp_reduce_smem[];

// Stage 1: block (segment, b) reduces its strided share of chunks: two
// chunks loaded before either is pushed (more bytes in flight per thread),
// pushed in chunk order; then the pairwise tree in shared memory. A segment
// of one block is finished here (one launch); otherwise the block writes
// its partial for stage 2.
template <int V, typename Acc, typename Push, typename Finish>
__global__ void SegmentPartialKernel(Push push, int64_t chunks, Acc* partials, Finish finish) {
  Acc* lane = reinterpret_cast<Acc*>(ddp_reduce_smem);
  const int64_t segment = blockIdx.x;
  const int t = threadIdx.x;
  const int64_t stride = int64_t{gridDim.y} * blockDim.x;
  Acc acc = Acc::Zero();
  int64_t j = int64_t{blockIdx.y} * blockDim.x + t;
  for (; j + stride < chunks; j += 2 * stride) {
    const auto first = push.template Load<V>(segment, j * V);
    const auto second = push.template Load<V>(segment, (j + stride) * V);
    push.template Push<V>(acc, segment, first);
    push.template Push<V>(acc, segment, second);
  }
  if (j < chunks) push.template Push<V>(acc, segment, push.template Load<V>(segment, j * V));
  lane[t] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) lane[t].Merge(lane[t + s]);
    __syncthreads();
  }
  if (t != 0) return;
  if (gridDim.y == 1) {
    Acc total = Acc::Zero();  // as stage 2 merges one partial: the same bits
    total.Merge(lane[0]);
    finish(segment, total);
  } else {
    partials[segment * gridDim.y + blockIdx.y] = lane[0];
  }
}

// Stage 2: each segment merges its partials in block order; a grid-stride
// loop, since GridFor caps the grid at kMaxGridBlocks blocks.
template <typename Acc, typename Finish>
__global__ void SegmentFinishKernel(const Acc* partials, int64_t segments, int blocks, Finish finish) {
  SegmentFinishBody<Acc, Finish> body{partials, blocks, finish};
  ForEachStrided(ThisThread(), segments, body);
}

// For each of `segments` segments of `length` elements: push's chunks in
// the order of `plan` (reduce.h; plan.width divides length), then
// finish(segment, acc).
template <typename Acc, typename Push, typename Finish>
void ReduceSegments(int64_t segments, int64_t length, const ReducePlan& plan, Push push, Finish finish,
                    cudaStream_t stream) {
  if (segments <= 0) return;
  if (segments > 0x7fffffff) throw std::invalid_argument("ReduceSegments: too many segments");
  if (length % plan.width != 0) throw std::invalid_argument("ReduceSegments: chunk width must divide the length");
  const int64_t chunks = length / plan.width;
  const dim3 grid(static_cast<unsigned>(segments), static_cast<unsigned>(plan.blocks));
  const std::size_t smem = plan.threads * sizeof(Acc);
  StreamScratch<Acc> partials(plan.blocks > 1 ? static_cast<std::size_t>(segments) * plan.blocks : 0, stream);
  WithChunkWidth<typename Acc::Value>(plan.width, [&](auto v) {
    constexpr int V = decltype(v)::value;
    SegmentPartialKernel<V, Acc><<<grid, plan.threads, smem, stream>>>(push, chunks, partials.get(), finish);
  });
  DDP_CUDA_CHECK(cudaGetLastError());
  if (plan.blocks > 1) {
    SegmentFinishKernel<Acc><<<GridFor(segments, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        partials.get(), segments, plan.blocks, finish);
    DDP_CUDA_CHECK(cudaGetLastError());
  }
  partials.Release();
}

inline void RequireNonNegative(int64_t v, const char* what) {
  if (v < 0) throw std::invalid_argument(std::string(what) + " must be >= 0, got " + std::to_string(v));
}

}  // namespace ddp::cuda::internal
