// Grid sizing and the per-thread bodies of the kernels whose outputs are
// indexed by the grid (one output per index), as __host__ __device__
// functions: the kernels in launch.cuh and norm_kernels.cu are one call of
// these, and grid_stride_test runs the same bodies on the CPU for every
// thread of the grid GridFor picks, over index ranges past what 65535
// blocks of 256 threads cover without a stride loop.
//
// No CUDA header: the host compiler builds this file for the test.
#pragma once

#include <cstdint>

#include "core/cuda/reduce.h"

namespace ddp::cuda::internal {

inline constexpr int kElementwiseThreads = 256;
inline constexpr int64_t kMaxGridBlocks = 65535;  // grid-stride loops cover the rest

inline unsigned GridFor(int64_t total, int threads) {
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  return static_cast<unsigned>(blocks);
}

// Where one thread stands in a one-dimensional grid (blockIdx.x,
// blockDim.x, threadIdx.x, gridDim.x).
struct Thread {
  int64_t block;
  int64_t block_dim;
  int64_t thread;
  int64_t grid_dim;
};

// The indices thread `t` handles: its own, then every grid-size stride.
template <typename F>
DDP_HD void ForEachStrided(const Thread& t, int64_t total, F& f) {
  const int64_t stride = t.grid_dim * t.block_dim;
  for (int64_t i = t.block * t.block_dim + t.thread; i < total; i += stride) f(i);
}

// The elementwise kernels in chunks (chunk.h): index j is the chunk of
// elements j * V .. j * V + V - 1.
template <int V, typename F>
struct ChunkBody {
  F f;
  DDP_HD void operator()(int64_t j) const { f.template ChunkAt<V>(j * V); }
};

// Stage 2 of reduce.h's segment reduction: each segment merges its blocks'
// partials in block order, then finish(segment, acc).
template <typename Acc, typename Finish>
struct SegmentFinishBody {
  const Acc* partials;
  int blocks;
  Finish finish;
  DDP_HD void operator()(int64_t segment) const {
    Acc acc = Acc::Zero();
    for (int b = 0; b < blocks; ++b) acc.Merge(partials[segment * blocks + b]);
    finish(segment, acc);
  }
};

// SyncBatchNorm's merge: channel c's (count, mean, M2) over the ranks.
template <typename T>
struct MergeStatsBody {
  const int64_t* counts;  // per rank
  int world;
  const T* means;  // [world][channels]
  const T* m2s;
  int64_t channels;
  T* mean;
  T* m2;
  DDP_HD void operator()(int64_t c) const {
    WelfordAcc<T> acc = WelfordAcc<T>::Zero();
    for (int r = 0; r < world; ++r) {
      acc.Merge(WelfordAcc<T>{counts[r], means[r * channels + c], m2s[r * channels + c]});
    }
    mean[c] = acc.mean;
    m2[c] = acc.m2;
  }
};

}  // namespace ddp::cuda::internal
