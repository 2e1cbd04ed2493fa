// SyncBatchNorm on the Comm API: core/nn BatchNorm's merge hooks as two
// collectives, the ones PyTorch's SyncBatchNorm issues: forward, one
// all_gather of every rank's (count, mean, M2) per channel, merged in rank
// order; backward, one all_reduce (sum) of (sum dy, sum dy * xhat).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/comm/comm.h"
#include "core/nn/batch_norm.h"

namespace ddp::bench {

template <typename S>
nn::BatchNormHooks<S> SyncBatchNormHooks(comm::Comm& comm) {
  nn::BatchNormHooks<S> hooks;
  hooks.merge_stats = [&comm](const nn::ChannelStats<S>& local) {
    const int c = local.channels();
    // The count travels in the payload's type: exact below 2^24 in float.
    std::vector<S> mine(1 + 2 * static_cast<std::size_t>(c));
    mine[0] = static_cast<S>(local.count);
    for (int i = 0; i < c; ++i) {
      mine[1 + i] = local.mean[i];
      mine[1 + c + i] = local.m2[i];
    }
    const std::vector<S> all = comm.Allgather<S>(mine);
    std::vector<nn::ChannelStats<S>> parts;
    for (int r = 0; r < comm.world_size(); ++r) {
      const S* p = all.data() + static_cast<std::size_t>(r) * mine.size();
      nn::ChannelStats<S> s = nn::ChannelStats<S>::Empty(c);
      s.count = static_cast<std::int64_t>(p[0]);
      for (int i = 0; i < c; ++i) {
        s.mean[i] = p[1 + i];
        s.m2[i] = p[1 + c + i];
      }
      parts.push_back(std::move(s));
    }
    return nn::MergeChannelStats<S>(std::span<const nn::ChannelStats<S>>(parts));
  };
  hooks.merge_grad_sums = [&comm](const nn::ChannelGradSums<S>& local) {
    const int c = static_cast<int>(local.sum_dy.size());
    std::vector<S> both(2 * static_cast<std::size_t>(c));
    for (int i = 0; i < c; ++i) {
      both[i] = local.sum_dy[i];
      both[c + i] = local.sum_dy_xhat[i];
    }
    comm.Allreduce<S>(both);
    nn::ChannelGradSums<S> out{nn::Vector<S>(c), nn::Vector<S>(c)};
    for (int i = 0; i < c; ++i) {
      out.sum_dy[i] = both[i];
      out.sum_dy_xhat[i] = both[c + i];
    }
    return out;
  };
  return hooks;
}

}  // namespace ddp::bench
