// The numerics shared by the kernels and by their host emulation
// (reduce_emulation.h): accumulators and the fixed reduction plan.
//
// A "segment" is what one statistic is taken over: a BatchNorm channel
// (N * H * W strided values) or a GroupNorm group (one contiguous block).
// Its elements are taken in chunks of `width` consecutive elements (1, or 16
// bytes: chunk.h), chunk j holding elements j * width .. j * width + width - 1.
// Each segment is split over `blocks` blocks of `threads` threads; thread t of
// block b accumulates chunks b * threads + t, stepping by blocks * threads,
// each chunk's elements in order; a block merges its threads pairwise
// (stride threads/2, ..., 1), and the blocks' partials are merged in block
// order (by one thread per segment; by the block itself where there is one).
// The order is fixed by the shape, so results are bitwise reproducible run
// to run and on any GPU (no atomics).
//
// WelfordAcc accumulates (count, mean, M2) with Welford's update and merges
// with Chan, Golub & LeVeque's pairwise formula, written exactly as
// core/nn/channel_stats.h's MergeInto, so no raw sum of squares is ever
// formed (E[x^2] - E[x]^2 cancels when |mean| >> std).
//
// Every a * b + c the kernels evaluate is written as M::Apply(a, b, c), M a
// multiply-add policy. The kernels use FusedMulAdd (one rounding: fma), which
// is what nvcc's default --fmad=true made of these expressions anyway (read
// from the sm_90 SASS), but now fixed in the source: the device bits no
// longer depend on a compiler flag, and the host emulation
// (reduce_emulation.h, norm_emulation.h) reproduces them exactly.
// SeparateMulAdd (two roundings) lets the CPU tests show that the error
// bounds (norm_bounds.h) hold without FMA too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define DDP_HD __host__ __device__
#else
#define DDP_HD
#endif

namespace ddp::cuda {

struct FusedMulAdd {
  template <typename T>
  DDP_HD static T Apply(T a, T b, T c) {
#if defined(__CUDA_ARCH__)
    return fma(a, b, c);
#else
    return std::fma(a, b, c);
#endif
  }
};

// Host only in practice. The product is rounded before the add: with
// -std=c++20 GCC does not contract the two statements (-ffp-contract=off).
struct SeparateMulAdd {
  template <typename T>
  DDP_HD static T Apply(T a, T b, T c) {
    const T product = a * b;
    return product + c;
  }
};

template <typename T, typename M = FusedMulAdd>
struct WelfordAcc {
  using Value = T;
  int64_t count;
  T mean;
  T m2;

  DDP_HD static WelfordAcc Zero() { return WelfordAcc{0, T(0), T(0)}; }
  DDP_HD void Push(T x) {
    ++count;
    const T d = x - mean;
    mean += d / static_cast<T>(count);
    m2 = M::Apply(d, x - mean, m2);
  }
  DDP_HD void Merge(const WelfordAcc& o) {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    const int64_t n = count + o.count;
    const T na = static_cast<T>(count);
    const T nb = static_cast<T>(o.count);
    const T total = static_cast<T>(n);
    const T delta = o.mean - mean;
    mean = M::Apply(delta, nb / total, mean);
    m2 += M::Apply(delta * delta, na * nb / total, o.m2);
    count = n;
  }
};

// Two running sums, a += s and b += p * q (BatchNorm's sum dy and
// sum dy * (x - mean); GroupNorm's dbeta and dgamma).
template <typename T, typename M = FusedMulAdd>
struct SumPairAcc {
  using Value = T;
  T a;
  T b;

  DDP_HD static SumPairAcc Zero() { return SumPairAcc{T(0), T(0)}; }
  DDP_HD void Push(T s, T p, T q) {
    a += s;
    b = M::Apply(p, q, b);
  }
  DDP_HD void Merge(const SumPairAcc& o) {
    a += o.a;
    b += o.b;
  }
};

inline constexpr int kReduceThreads = 256;  // a power of two (pairwise tree)
inline constexpr int kMaxBlocksPerSegment = 64;
inline constexpr int64_t kChunksPerThread = 4;
// Where segments are few: up to this many blocks in all (8 for each of an
// H100's or H200's 132 SMs), as long as each thread keeps kMinFillChunks.
// A constant, not the device's count: the order, and so the bits, must not
// depend on the GPU.
inline constexpr int64_t kFillBlocks = 8 * 132;
inline constexpr int64_t kMinFillChunks = 2;

struct ReducePlan {
  int threads;
  int blocks;     // per segment
  int width = 1;  // elements per chunk
};

// Chunks of `width` (which must divide `length`) where the segment has at
// least a chunk per thread of a block; a shorter segment one element per
// step (chunks would only idle threads and lengthen each thread's chain of
// pushes in a launch that its launch time bounds anyway). Enough blocks that
// each thread has about kChunksPerThread chunks; where a segment needs
// several blocks anyway and few segments would leave SMs idle, more, up to
// kFillBlocks in all; at most kMaxBlocksPerSegment; at least one block even
// for empty segments.
inline ReducePlan PlanReduce(int64_t segments, int64_t length, int width) {
  if (length < int64_t{kReduceThreads} * width) width = 1;
  const int64_t chunks = (length + width - 1) / width;
  const int64_t by_work = (chunks + kReduceThreads * kChunksPerThread - 1) / (kReduceThreads * kChunksPerThread);
  const int64_t n = std::max<int64_t>(segments, 1);
  const int64_t fill = std::min((kFillBlocks + n - 1) / n, chunks / (kReduceThreads * kMinFillChunks));
  const int64_t blocks = std::clamp<int64_t>(by_work > 1 ? std::max(by_work, fill) : by_work, 1, kMaxBlocksPerSegment);
  return ReducePlan{kReduceThreads, static_cast<int>(blocks), width};
}

// The plan of the kernels up to 2b6c0ff: one element per step, at least 4
// elements per thread, at most 64 blocks. Kept for the diagnosis of the
// H100 failures of bd4d2aa (norm_emulation_test), whose printed numbers it
// reproduces.
inline ReducePlan LegacyPlanReduce(int64_t length) {
  constexpr int64_t kPerBlock = int64_t{kReduceThreads} * 4;
  int64_t blocks = (length + kPerBlock - 1) / kPerBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocksPerSegment) blocks = kMaxBlocksPerSegment;
  return ReducePlan{kReduceThreads, static_cast<int>(blocks), 1};
}

}  // namespace ddp::cuda
