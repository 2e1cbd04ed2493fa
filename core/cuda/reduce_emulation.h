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

// The plan's order over `chunks` chunks: chunk(acc, j) for each chunk j a
// thread takes, in the thread's order; threads merged in the block's
// pairwise tree; blocks merged in order from Acc::Zero().
template <typename Acc, typename ChunkFn>
Acc EmulatePlannedReduce(int64_t chunks, const ReducePlan& plan, ChunkFn chunk) {
  const int64_t stride = int64_t{plan.blocks} * plan.threads;
  Acc total = Acc::Zero();
  std::vector<Acc> lane(plan.threads);
  for (int b = 0; b < plan.blocks; ++b) {
    for (int t = 0; t < plan.threads; ++t) {
      lane[t] = Acc::Zero();
      for (int64_t j = int64_t{b} * plan.threads + t; j < chunks; j += stride) chunk(lane[t], j);
    }
    for (int s = plan.threads / 2; s > 0; s /= 2) {
      for (int t = 0; t < s; ++t) lane[t].Merge(lane[t + s]);
    }
    total.Merge(lane[0]);
  }
  return total;
}

// push(acc, k) adds element k (0 <= k < length) of the segment to acc, the
// elements of each chunk in order.
template <typename Acc, typename PushFn>
Acc EmulateSegmentReduce(int64_t length, const ReducePlan& plan, PushFn push) {
  const int64_t w = plan.width;
  return EmulatePlannedReduce<Acc>((length + w - 1) / w, plan, [&](Acc& acc, int64_t j) {
    for (int64_t k = j * w; k < j * w + w && k < length; ++k) push(acc, k);
  });
}

// A push with the kernels' Load<V> / Push<V> (norm_bodies.h).
template <typename P, typename Acc>
concept ChunkPush = requires(const P& p, Acc& acc) {
  p.template Push<1>(acc, int64_t{0}, p.template Load<1>(int64_t{0}, int64_t{0}));
};

// launch.cuh's ReduceSegments: each segment's chunks in the plan's order
// through push's own Load<V> / Push<V> (or, for a plain push(acc, segment,
// k), element by element in the same order), then finish(segment, acc).
template <typename Acc, typename Push, typename Finish>
void EmulateReduceSegments(int64_t segments, int64_t length, const ReducePlan& plan, const Push& push,
                           const Finish& finish) {
  for (int64_t s = 0; s < segments; ++s) {
    if constexpr (ChunkPush<Push, Acc>) {
      WithChunkWidth<typename Acc::Value>(plan.width, [&](auto v) {
        constexpr int V = decltype(v)::value;
        finish(s, EmulatePlannedReduce<Acc>(length / V, plan, [&](Acc& acc, int64_t j) {
                 push.template Push<V>(acc, s, push.template Load<V>(s, j * V));
               }));
      });
    } else {
      finish(s, EmulateSegmentReduce<Acc>(length, plan, [&](Acc& acc, int64_t k) { push(acc, s, k); }));
    }
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
