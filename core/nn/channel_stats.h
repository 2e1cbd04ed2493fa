// Per-channel statistics of BatchNorm, and how partial statistics merge.
//
// Representation: (count, mean, M2) per channel, M2 = sum of squared
// deviations from the mean. Why not raw sums (sum x, sum x^2)? Then
// var = E[x^2] - E[x]^2 cancels catastrophically once |mean| >> std (a channel
// with mean 1e8 and std 1 keeps no correct digit in double). Means and M2 are
// computed locally in two passes (deviations from the local mean), and partial
// results are combined with Chan, Golub & LeVeque's pairwise update
//   n = na + nb, d = mean_b - mean_a,
//   mean = mean_a + d * nb / n,  M2 = M2a + M2b + d^2 * na * nb / n,
// which never subtracts two large sums. Counts may differ per participant and
// may be zero (an empty part contributes nothing). PyTorch's SyncBatchNorm
// likewise exchanges (mean, invstd, count) rather than raw sums.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
struct ChannelStats {
  int64_t count = 0;  // values per channel (N * H * W); the same for every channel
  Vector<S> mean;     // C
  Vector<S> m2;       // C

  static ChannelStats Empty(int channels) {
    return ChannelStats{0, Vector<S>::Zero(channels), Vector<S>::Zero(channels)};
  }
  int channels() const { return static_cast<int>(mean.size()); }
};

// Local statistics of x over (N, H, W) for each channel, in two passes.
// An empty batch (N = 0) gives count 0, mean 0, M2 0.
template <typename S>
ChannelStats<S> ComputeChannelStats(const Tensor4<S>& x) {
  ChannelStats<S> s = ChannelStats<S>::Empty(x.c);
  s.count = int64_t{x.n} * x.h * x.w;
  if (s.count == 0) return s;
  const Eigen::Index plane = x.PlaneSize();
  for (int c = 0; c < x.c; ++c) {
    S sum = 0;
    for (int n = 0; n < x.n; ++n) sum += Eigen::Map<const Vector<S>>(x.Plane(n, c), plane).sum();
    const S mean = sum / static_cast<S>(s.count);
    S m2 = 0;
    for (int n = 0; n < x.n; ++n) {
      m2 += (Eigen::Map<const Vector<S>>(x.Plane(n, c), plane).array() - mean).square().sum();
    }
    s.mean[c] = mean;
    s.m2[c] = m2;
  }
  return s;
}

// Chan's pairwise update of `acc` with `part`; either may have count 0.
template <typename S>
void MergeInto(const ChannelStats<S>& part, ChannelStats<S>* acc) {
  if (part.channels() != acc->channels() || part.m2.size() != part.mean.size()) {
    throw std::invalid_argument("MergeChannelStats: channel counts differ (" + std::to_string(part.channels()) +
                                " vs " + std::to_string(acc->channels()) + ")");
  }
  if (part.count < 0) throw std::invalid_argument("MergeChannelStats: negative count");
  if (part.count == 0) return;
  if (acc->count == 0) {
    *acc = part;
    return;
  }
  const int64_t n = acc->count + part.count;
  const S na = static_cast<S>(acc->count);
  const S nb = static_cast<S>(part.count);
  const S total = static_cast<S>(n);
  const Vector<S> delta = part.mean - acc->mean;
  acc->mean += delta * (nb / total);
  acc->m2 += part.m2 + delta.cwiseProduct(delta) * (na * nb / total);
  acc->count = n;
}

// Merges participants' statistics in the given order (give every rank the
// same order and every rank gets the same bits). Needs at least one part.
template <typename S>
ChannelStats<S> MergeChannelStats(std::span<const ChannelStats<S>> parts) {
  if (parts.empty()) throw std::invalid_argument("MergeChannelStats: no parts");
  ChannelStats<S> acc = ChannelStats<S>::Empty(parts[0].channels());
  for (const auto& p : parts) MergeInto(p, &acc);
  return acc;
}

// Per-channel sums that BatchNorm's input gradient needs: sum dy and
// sum dy * xhat over (N, H, W). They merge by plain addition: the x-hat here
// is already normalised with the merged (global) mean and invstd.
template <typename S>
struct ChannelGradSums {
  Vector<S> sum_dy;       // C
  Vector<S> sum_dy_xhat;  // C
};

template <typename S>
ChannelGradSums<S> SumChannelGradSums(std::span<const ChannelGradSums<S>> parts) {
  if (parts.empty()) throw std::invalid_argument("SumChannelGradSums: no parts");
  ChannelGradSums<S> acc{Vector<S>::Zero(parts[0].sum_dy.size()), Vector<S>::Zero(parts[0].sum_dy.size())};
  for (const auto& p : parts) {
    if (p.sum_dy.size() != acc.sum_dy.size() || p.sum_dy_xhat.size() != acc.sum_dy.size()) {
      throw std::invalid_argument("SumChannelGradSums: channel counts differ");
    }
    acc.sum_dy += p.sum_dy;
    acc.sum_dy_xhat += p.sum_dy_xhat;
  }
  return acc;
}

}  // namespace ddp::nn
