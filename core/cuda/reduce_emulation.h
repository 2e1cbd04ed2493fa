// The segment reduction of reduce.h run on the host in exactly the kernels'
// order (thread-strided accumulation, pairwise block tree, blocks merged in
// order). Lets the CPU tests check the numerics of the GPU algorithm against
// core/nn where no GPU exists; the gpu tests then check the kernels
// themselves.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace ddp::cuda
