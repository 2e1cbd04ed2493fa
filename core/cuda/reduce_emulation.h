// The segment reduction of reduce.h run on the host in exactly the kernels'
// order (thread-strided accumulation, pairwise block tree, blocks merged in
// order). Lets the CPU tests check the numerics of the GPU algorithm against
// core/nn where no GPU exists; the gpu tests then check the kernels
// themselves. EmulateReduceSegments / EmulateElementwise take the kernels'
// own functors (launch.cuh's ReduceSegments / LaunchElementwise on the host);
// norm_emulation.h builds the norm kernels' API from them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cuda/chunk.h"
#include "core/cuda/reduce.h"

namespace ddp::cuda {

// push(acc, k) adds element k (0 <= k < length) of the segment to acc.
template <typename Acc, typename PushFn>
Acc EmulateSegmentReduce(int64_t length, const ReducePlan& plan, PushFn push) {
  const int64_t stride = int64_t{plan.blocks} * plan.threads;
  Acc total = Acc::Zero();
  std::vector<Acc> lane(plan.threads);
  for (int b = 0; b < plan.blocks; ++b) {
    for (int t = 0; t < plan.threads; ++t) {
      lane[t] = Acc::Zero();
      for (int64_t k = int64_t{b} * plan.threads + t; k < length; k += stride) push(lane[t], k);
    }
    for (int s = plan.threads / 2; s > 0; s /= 2) {
      for (int t = 0; t < s; ++t) lane[t].Merge(lane[t + s]);
    }
    total.Merge(lane[0]);
  }
  return total;
}

// launch.cuh's ReduceSegments: push(acc, segment, k), then finish(segment, acc).
template <typename Acc, typename Push, typename Finish>
void EmulateReduceSegments(int64_t segments, int64_t length, const Push& push, const Finish& finish) {
  const ReducePlan plan = PlanReduce(length);
  for (int64_t s = 0; s < segments; ++s) {
    finish(s, EmulateSegmentReduce<Acc>(length, plan, [&](Acc& acc, int64_t k) { push(acc, s, k); }));
  }
}

// launch.cuh's LaunchElementwise: f(i) for every i in [0, total).
template <typename F>
void EmulateElementwise(int64_t total, const F& f) {
  for (int64_t i = 0; i < total; ++i) f(i);
}

// launch.cuh's LaunchChunks: f.ChunkAt<V>(i0) for every chunk, in order.
template <typename T, typename F>
void EmulateChunks(int64_t total, int width, const F& f) {
  WithChunkWidth<T>(width, [&](auto v) {
    constexpr int V = decltype(v)::value;
    for (int64_t i0 = 0; i0 < total; i0 += V) f.template ChunkAt<V>(i0);
  });
}

}  // namespace ddp::cuda
