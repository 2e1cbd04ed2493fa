// SyncBatchNorm: BatchNorm whose statistics cover the batches of every rank.
//
// It is core/nn's BatchNorm with its two merge hooks filled by collectives:
//   forward:  ONE all-gather of (count, mean[C], M2[C]) per rank (2C + 1
//             values), merged on every rank with Chan's pairwise update in
//             rank order (nn::MergeChannelStats);
//   backward: ONE all-reduce (sum) of (sum dy[C], sum dy*xhat[C]) (2C values).
//
// Why an all-gather of (count, mean, M2) and not one all-reduce of fused raw
// sums (count, sum x, sum x^2)? The all-reduce would move fewer bytes (2C + 1
// instead of W * (2C + 1) received), but var = E[x^2] - E[x]^2 cancels
// catastrophically once |mean| >> std (channel_stats.h; sync_batch_norm_test
// shows it at mean 1e6, std 1). Chan's merge never subtracts large sums, takes
// any per-rank count including 0 (a rank with no samples still joins the
// collective, with count 0, so no rank is left waiting), and since every rank
// merges the same gathered bytes in the same order, every rank gets the same
// bits. At the channel counts of BatchNorm (C <= a few thousand) both
// collectives are latency-bound, so the extra W-fold receive volume is cheap;
// bench/sync_bn measures it against the one-collective floor.
//
// PyTorch 1.13's SyncBatchNorm (torch/nn/modules/_functions.py) has the same
// shape: one all_gather of cat(mean, invstd, count) (2C + 1) forward, one
// all_reduce of cat(sum_dy, sum_dy_xmu) (2C) backward. We gather M2 instead
// of invstd, so the merged variance needs no 1/invstd^2 - eps round trip.
//
// dgamma and dbeta stay local (as in PyTorch): DDP's gradient averaging
// combines them. The count is sent as a value of type S; for float that is
// exact up to 2^24 values per channel per rank (checked).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/nn/batch_norm.h"
#include "core/nn/channel_stats.h"

namespace ddp::small_batch_bn {

// What the SyncBatchNorm layers built with one counter sent, for reports.
struct SyncBnTraffic {
  int64_t collectives = 0;
  int64_t allgathers = 0;
  int64_t allreduces = 0;
  int64_t bytes_contributed = 0;  // payload each rank puts in (sum over calls)
  int64_t bytes_received = 0;     // what each rank gets back (W x payload for an all-gather)
};

// Every rank's local statistics, in rank order: ONE all-gather of
// (count, mean[C], M2[C]) per rank. SyncBatchNorm's forward merges them; the
// repro measures how far apart they are.
template <typename S>
std::vector<nn::ChannelStats<S>> AllgatherChannelStats(comm::Comm& comm, const nn::ChannelStats<S>& local,
                                                       SyncBnTraffic* traffic = nullptr) {
  const int c = local.channels();
  const int w = comm.world_size();
  if (sizeof(S) < 8 && local.count > (int64_t{1} << 24)) {
    throw std::invalid_argument("SyncBatchNorm<float>: " + std::to_string(local.count) +
                                " values per channel on one rank cannot be sent exactly as float");
  }
  // Packed per rank: [count, mean_0..mean_{C-1}, M2_0..M2_{C-1}].
  std::vector<S> mine(2 * static_cast<std::size_t>(c) + 1);
  mine[0] = static_cast<S>(local.count);
  for (int i = 0; i < c; ++i) {
    mine[1 + i] = local.mean[i];
    mine[1 + c + i] = local.m2[i];
  }
  const std::vector<S> all = comm.Allgather(std::span<const S>(mine));
  if (traffic) {
    ++traffic->collectives;
    ++traffic->allgathers;
    traffic->bytes_contributed += static_cast<int64_t>(mine.size() * sizeof(S));
    traffic->bytes_received += static_cast<int64_t>(all.size() * sizeof(S));
  }
  std::vector<nn::ChannelStats<S>> parts(w);
  for (int r = 0; r < w; ++r) {
    const S* p = all.data() + static_cast<std::size_t>(r) * mine.size();
    parts[r].count = static_cast<int64_t>(p[0]);
    parts[r].mean = Eigen::Map<const nn::Vector<S>>(p + 1, c);
    parts[r].m2 = Eigen::Map<const nn::Vector<S>>(p + 1 + c, c);
  }
  return parts;
}

// The hooks that turn a BatchNorm into a SyncBatchNorm over `comm`. `comm`
// (and `traffic`, when given) must outlive every layer built with them.
template <typename S>
nn::BatchNormHooks<S> SyncBatchNormHooks(comm::Comm& comm, SyncBnTraffic* traffic = nullptr) {
  nn::BatchNormHooks<S> hooks;
  hooks.merge_stats = [&comm, traffic](const nn::ChannelStats<S>& local) {
    const std::vector<nn::ChannelStats<S>> parts = AllgatherChannelStats(comm, local, traffic);
    return nn::MergeChannelStats(std::span<const nn::ChannelStats<S>>(parts));
  };
  hooks.merge_grad_sums = [&comm, traffic](const nn::ChannelGradSums<S>& local) {
    const auto c = local.sum_dy.size();
    std::vector<S> both(2 * static_cast<std::size_t>(c));
    Eigen::Map<nn::Vector<S>>(both.data(), c) = local.sum_dy;
    Eigen::Map<nn::Vector<S>>(both.data() + c, c) = local.sum_dy_xhat;
    comm.Allreduce(std::span<S>(both));
    if (traffic) {
      ++traffic->collectives;
      ++traffic->allreduces;
      traffic->bytes_contributed += static_cast<int64_t>(both.size() * sizeof(S));
      traffic->bytes_received += static_cast<int64_t>(both.size() * sizeof(S));
    }
    return nn::ChannelGradSums<S>{Eigen::Map<const nn::Vector<S>>(both.data(), c),
                                  Eigen::Map<const nn::Vector<S>>(both.data() + c, c)};
  };
  return hooks;
}

// A NormFactory for the reference models (TinyCnn, Mlp) that builds SyncBatchNorm layers.
template <typename S>
nn::NormFactory<S> SyncBatchNormFactory(comm::Comm& comm, nn::BatchNormOptions opts = {},
                                        SyncBnTraffic* traffic = nullptr) {
  return nn::BatchNormFactory<S>(opts, SyncBatchNormHooks<S>(comm, traffic));
}

}  // namespace ddp::small_batch_bn
