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
//
// On a device (core/device; with --backend nccl, the GPU) the same two
// collectives run on device buffers, which the Comm takes as they are
// (NCCL reads and writes device memory; Gloo the emulated device's host
// memory): core/device's DeviceBatchNorm computes the local statistics with
// the kernels, the hooks below all-gather them and merge them with
// BnMergeStats, in rank order as on the host. One thing comes back to the
// host per forward: the W gathered counts (W values), because BnMergeStats
// and BnFinalizeStats take the count on the host, where the count <= 1 error
// is also raised. It is counted as a `statistic` copy.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/batch_norm.h"
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

// The count travels as a value of S: exact up to 2^24 in float.
template <typename S>
void CheckCountIsExact(int64_t count) {
  if (sizeof(S) < 8 && count > (int64_t{1} << 24)) {
    throw std::invalid_argument("SyncBatchNorm<float>: " + std::to_string(count) +
                                " values per channel on one rank cannot be sent exactly as float");
  }
}

// Adds one collective of `contributed` / `received` values of S.
template <typename S>
void CountCollective(SyncBnTraffic* traffic, bool allgather, std::size_t contributed, std::size_t received) {
  if (!traffic) return;
  ++traffic->collectives;
  ++(allgather ? traffic->allgathers : traffic->allreduces);
  traffic->bytes_contributed += static_cast<int64_t>(contributed * sizeof(S));
  traffic->bytes_received += static_cast<int64_t>(received * sizeof(S));
}

// Every rank's local statistics, in rank order: ONE all-gather of
// (count, mean[C], M2[C]) per rank. SyncBatchNorm's forward merges them; the
// repro measures how far apart they are.
template <typename S>
std::vector<nn::ChannelStats<S>> AllgatherChannelStats(comm::Comm& comm, const nn::ChannelStats<S>& local,
                                                       SyncBnTraffic* traffic = nullptr) {
  const int c = local.channels();
  const int w = comm.world_size();
  CheckCountIsExact<S>(local.count);
  // Packed per rank: [count, mean_0..mean_{C-1}, M2_0..M2_{C-1}].
  std::vector<S> mine(2 * static_cast<std::size_t>(c) + 1);
  mine[0] = static_cast<S>(local.count);
  for (int i = 0; i < c; ++i) {
    mine[1 + i] = local.mean[i];
    mine[1 + c + i] = local.m2[i];
  }
  const std::vector<S> all = comm.Allgather(std::span<const S>(mine));
  CountCollective<S>(traffic, true, mine.size(), all.size());
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
    CountCollective<S>(traffic, false, both.size(), both.size());
    return nn::ChannelGradSums<S>{Eigen::Map<const nn::Vector<S>>(both.data(), c),
                                  Eigen::Map<const nn::Vector<S>>(both.data() + c, c)};
  };
  return hooks;
}

// The same hooks for a DeviceBatchNorm: the same two collectives, on device
// buffers. `comm` (and `traffic`) must outlive every layer built with them.
template <typename S>
device::DeviceBatchNormHooks<S> SyncBatchNormDeviceHooks(comm::Comm& comm, SyncBnTraffic* traffic = nullptr) {
  device::DeviceBatchNormHooks<S> hooks;
  hooks.merge_stats = [&comm, traffic](device::Device<S>& dev, device::DeviceArray<S>& scratch, const S* local,
                                       int64_t local_count, int64_t c, S* mean, S* m2) {
    CheckCountIsExact<S>(local_count);
    const std::size_t per = 2 * static_cast<std::size_t>(c) + 1, w = static_cast<std::size_t>(comm.world_size());
    // The gathered packets, then the means (W x C), the M2s (W x C) and the
    // counts (W) as BnMergeStats takes them.
    S* all = scratch.Reserve(w * per + 2 * w * c + w);
    S* means = all + w * per;
    S* m2s = means + w * c;
    S* counts = m2s + w * c;
    dev.Synchronize();  // the local statistics are written before the engine reads them
    comm.Allgather(local, all, per, comm::DTypeOf<S>());
    CountCollective<S>(traffic, true, per, w * per);
    dev.CopyRows(counts, 1, all, per, 1, w);
    dev.CopyRows(means, c, all + 1, per, c, w);
    dev.CopyRows(m2s, c, all + 1 + c, per, c, w);
    std::vector<S> host_counts(w);
    dev.Download(host_counts.data(), counts, w, device::CopyKind::kStatistic);
    std::vector<int64_t> n(w);
    for (std::size_t r = 0; r < w; ++r) n[r] = static_cast<int64_t>(host_counts[r]);
    return dev.BnMergeStats(n, means, m2s, c, mean, m2);
  };
  hooks.merge_grad_sums = [&comm, traffic](device::Device<S>& dev, S* sums, int64_t c) {
    dev.Synchronize();
    comm.Allreduce(sums, 2 * static_cast<std::size_t>(c), comm::DTypeOf<S>(), comm::ReduceOp::kSum);
    CountCollective<S>(traffic, false, 2 * c, 2 * c);
  };
  return hooks;
}

// A NormFactory for the reference models (TinyCnn, Mlp) that builds
// SyncBatchNorm layers: on `device` when one is given (DeviceBatchNorm with
// the device hooks), else core/nn's BatchNorm with the host hooks.
template <typename S>
nn::NormFactory<S> SyncBatchNormFactory(comm::Comm& comm, nn::BatchNormOptions opts = {},
                                        SyncBnTraffic* traffic = nullptr, device::Device<S>* device = nullptr) {
  if (device) return device::DeviceBatchNormFactory<S>(device, opts, SyncBatchNormDeviceHooks<S>(comm, traffic));
  return nn::BatchNormFactory<S>(opts, SyncBatchNormHooks<S>(comm, traffic));
}

}  // namespace ddp::small_batch_bn
