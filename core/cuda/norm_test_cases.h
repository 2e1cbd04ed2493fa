// (tests) The norm kernels' test cases, written once for two backends:
// norm_kernels_test runs them on the GPU (DeviceBuffer, the kernels), and
// norm_emulation_test runs the same cases on the host through
// norm_emulation.h, whose results are the kernels' bits. So the CPU test
// predicts every number the gpu test prints.
//
// A backend B provides: static constexpr const char* kName; a buffer type
// B::Buffer<T> (constructible from a size or a std::vector<T>, with get(),
// Poison(), ToHost()); norm_kernels.h's calls without the stream argument;
// and Sync().
//
// What is checked (README.md, "Tests"):
//  * outputs of the statistics and forward kernels (mean, M2, invstd,
//    running stats, y) and SyncBatchNorm's parts: normwise against core/nn's
//    Eigen implementation, < 1e-5 (float) and < 1e-12 (double);
//  * outputs of the gradient kernels (sum_dy = dbeta, sum_dy_xhat = dgamma,
//    BatchNorm dx, GroupNorm dx / dgamma / dbeta): every element within the
//    bound of norm_bounds.h around the exact value at the kernel's own
//    inputs; double must also stay < 1e-12 of Eigen, as before. The float
//    distance to Eigen is printed, not required: README.md says why.
// Every output is poisoned with NaN first, so an unwritten element fails.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda/compare.h"
#include "core/cuda/norm_bodies.h"
#include "core/cuda/norm_bounds.h"
#include "core/nn/batch_norm.h"
#include "core/nn/channel_stats.h"
#include "core/nn/group_norm.h"
#include "gtest/gtest.h"

namespace ddp::cuda::testing {

inline constexpr double kCaseEps = 1e-5;
inline constexpr double kCaseMomentum = 0.1;

struct CaseShape {
  int n, c, h, w;
};

template <typename T>
const char* TypeName() {
  return sizeof(T) == 4 ? "float" : "double";
}

template <typename T>
nn::Vector<T> Row(const nn::Matrix<T>& m) {
  return m.row(0).transpose();
}

template <typename B, typename T>
typename B::template Buffer<T> Poisoned(std::size_t n) {
  typename B::template Buffer<T> b(n);
  b.Poison();
  return b;
}

template <typename B, typename T>
void ExpectClose(const std::vector<T>& got, const nn::Vector<T>& ref, const std::string& what) {
  const double err = RelError(got, ref);
  std::printf("[%s] %-6s %-40s rel err %.3g\n", B::kName, TypeName<T>(), what.c_str(), err);
  EXPECT_LT(err, kTolerance<T>) << B::kName << " " << what << ": " << CountNaN<T>(got) << " NaN (unwritten) of "
                                << got.size();
}

// The gradient outputs: within the bound at the kernel's own inputs; for
// double also within 1e-12 of Eigen.
template <typename B, typename T>
void ExpectWithinBound(const std::vector<T>& got, const Bounded& ref, const nn::Vector<T>& eigen,
                       const std::string& what) {
  const BoundCheck b = CheckBound<T>(got, ref);
  const double vs_eigen = RelError(got, eigen);
  std::printf("[%s] %-6s %-40s err/bound %.3g (rel err %.3g, bound %.3g); vs Eigen %.3g\n", B::kName,
              TypeName<T>(), what.c_str(), b.ratio, b.rel_err, b.rel_bound, vs_eigen);
  EXPECT_LE(b.ratio, 1.0) << B::kName << " " << what << ": error above the rounding bound (rel err " << b.rel_err
                          << ", bound " << b.rel_bound << "); " << CountNaN<T>(got) << " NaN (unwritten) of "
                          << got.size();
  if constexpr (std::is_same_v<T, double>) {
    EXPECT_LT(vs_eigen, kTolerance<T>) << B::kName << " " << what << " vs Eigen";
  }
}

// BatchNorm training forward and backward, 3 shapes: one block per channel,
// several blocks per channel in chunks (cross-block Chan merges), N x C.
template <typename B, typename T>
void BatchNormTrainingCase(B& b, const CaseShape& s) {
  using Buf = typename B::template Buffer<T>;
  const nn::Tensor4<T> x = RandomTensor<T>(s.n, s.c, s.h, s.w, 1);
  const nn::Tensor4<T> dy = RandomTensor<T>(s.n, s.c, s.h, s.w, 2);
  const std::string tag = x.ShapeString() + " ";
  nn::BatchNorm<T> bn(s.c, nn::BatchNormOptions{kCaseMomentum, kCaseEps});
  const std::vector<T> gamma = RandomNonZero<T>(s.c, 3, 0.5, 1.5);
  const std::vector<T> beta = RandomNonZero<T>(s.c, 4, -0.5, 0.5);
  const std::vector<T> rm0 = RandomNonZero<T>(s.c, 5, -1, 1);
  const std::vector<T> rv0 = RandomNonZero<T>(s.c, 6, 0.5, 2);
  for (int c = 0; c < s.c; ++c) {
    bn.weight().value(0, c) = gamma[c];
    bn.bias().value(0, c) = beta[c];
    bn.running_mean()(0, c) = rm0[c];
    bn.running_var()(0, c) = rv0[c];
  }
  const nn::Tensor4<T> y_ref = bn.Forward(x);
  const nn::ChannelStats<T> stats = bn.last_stats();
  const nn::Tensor4<T> dx_ref = bn.Backward(dy);
  const nn::Vector<T> invstd_ref =
      ((stats.m2 / static_cast<T>(stats.count)).array() + static_cast<T>(kCaseEps)).rsqrt().matrix();

  const NchwShape shape{s.n, s.c, int64_t{s.h} * s.w};
  const Buf d_x(ToStd(x.data)), d_dy(ToStd(dy.data)), d_gamma(gamma), d_beta(beta);
  Buf d_rm(rm0), d_rv(rv0);
  auto mean = Poisoned<B, T>(s.c), m2 = Poisoned<B, T>(s.c), invstd = Poisoned<B, T>(s.c);
  auto y = Poisoned<B, T>(x.Size()), dx = Poisoned<B, T>(x.Size());
  auto sum_dy = Poisoned<B, T>(s.c), sum_dy_xhat = Poisoned<B, T>(s.c);
  b.BnLocalStats(d_x.get(), shape, mean.get(), m2.get());
  b.BnFinalizeStats(mean.get(), m2.get(), stats.count, s.c, kCaseEps, kCaseMomentum, invstd.get(), d_rm.get(),
                    d_rv.get());
  b.BnNormalize(d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get());
  b.BnLocalGradSums(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), sum_dy.get(), sum_dy_xhat.get());
  b.BnInputGrad(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), sum_dy.get(),
                sum_dy_xhat.get(), stats.count, dx.get());
  b.Sync();
  const std::vector<T> h_mean = mean.ToHost(), h_invstd = invstd.ToHost();
  const std::vector<T> h_sum_dy = sum_dy.ToHost(), h_sum_dy_xhat = sum_dy_xhat.ToHost();
  ExpectClose<B>(h_mean, stats.mean, tag + "BnLocalStats mean");
  ExpectClose<B>(m2.ToHost(), stats.m2, tag + "BnLocalStats M2");
  ExpectClose<B>(h_invstd, invstd_ref, tag + "BnFinalizeStats invstd");
  ExpectClose<B>(d_rm.ToHost(), Row(bn.running_mean()), tag + "running_mean");
  ExpectClose<B>(d_rv.ToHost(), Row(bn.running_var()), tag + "running_var");
  ExpectClose<B>(y.ToHost(), y_ref.data, tag + "BnNormalize y");

  // The gradient kernels, judged from their own inputs (incl. mean, invstd).
  const BnGradSumsRef sums =
      BnLocalGradSumsBounds(dy.data.data(), x.data.data(), shape, h_mean.data(), h_invstd.data());
  ExpectWithinBound<B>(h_sum_dy, sums.sum_dy, Row(bn.bias().grad), tag + "sum_dy (= dbeta)");
  ExpectWithinBound<B>(h_sum_dy_xhat, sums.sum_dy_xhat, Row(bn.weight().grad), tag + "sum_dy_xhat (= dgamma)");
  const Bounded dx_bound = BnInputGradBounds(dy.data.data(), x.data.data(), shape, h_mean.data(), h_invstd.data(),
                                             gamma.data(), h_sum_dy.data(), h_sum_dy_xhat.data(), stats.count);
  ExpectWithinBound<B>(dx.ToHost(), dx_bound, dx_ref.data, tag + "BnInputGrad dx");

  // The reduction order is fixed: a second run gives the same bits.
  const std::vector<T> first_m2 = m2.ToHost();
  m2.Poison();
  b.BnLocalStats(d_x.get(), shape, mean.get(), m2.get());
  b.Sync();
  EXPECT_EQ(std::memcmp(first_m2.data(), m2.ToHost().data(), first_m2.size() * sizeof(T)), 0) << tag;
}

inline const std::vector<CaseShape>& BatchNormShapes() {
  static const std::vector<CaseShape> shapes = {{5, 6, 7, 9}, {16, 3, 32, 32}, {7, 4, 1, 1}};
  return shapes;
}

template <typename B, typename T>
void BatchNormEvalCase(B& b) {
  using Buf = typename B::template Buffer<T>;
  const nn::Tensor4<T> x = RandomTensor<T>(6, 5, 4, 3, 7);
  nn::BatchNorm<T> bn(5, nn::BatchNormOptions{kCaseMomentum, kCaseEps});
  const std::vector<T> gamma = RandomNonZero<T>(5, 8, 0.5, 1.5), beta = RandomNonZero<T>(5, 9, -0.5, 0.5);
  for (int c = 0; c < 5; ++c) {
    bn.weight().value(0, c) = gamma[c];
    bn.bias().value(0, c) = beta[c];
  }
  bn.Forward(RandomTensor<T>(6, 5, 4, 3, 10));  // gives the running stats non-trivial values
  bn.SetTraining(false);
  const nn::Tensor4<T> y_ref = bn.Forward(x);

  const Buf d_x(ToStd(x.data)), d_gamma(gamma), d_beta(beta);
  const Buf d_rm(ToStd(Row(bn.running_mean()))), d_rv(ToStd(Row(bn.running_var())));
  auto invstd = Poisoned<B, T>(5), y = Poisoned<B, T>(x.Size());
  b.BnInvstdFromVar(d_rv.get(), 5, kCaseEps, invstd.get());
  b.BnNormalize(d_x.get(), NchwShape{6, 5, 12}, d_rm.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get());
  b.Sync();
  ExpectClose<B>(y.ToHost(), y_ref.data, x.ShapeString() + " eval y");
}

// SyncBatchNorm: three participants with 3, 0 and 4 samples, each running the
// local kernels on its slice; merged statistics (BnMergeStats) and summed
// gradient sums (the all-reduce, done on the host here) must give what one
// BatchNorm computes on the whole batch.
template <typename B, typename T>
void SyncBatchNormCase(B& b) {
  using Buf = typename B::template Buffer<T>;
  constexpr int kC = 4, kH = 5, kW = 5;
  const std::vector<int64_t> samples = {3, 0, 4};
  const int world = static_cast<int>(samples.size());
  const nn::Tensor4<T> x = RandomTensor<T>(7, kC, kH, kW, 11);
  const nn::Tensor4<T> dy = RandomTensor<T>(7, kC, kH, kW, 12);
  nn::BatchNorm<T> bn(kC, nn::BatchNormOptions{kCaseMomentum, kCaseEps});
  const std::vector<T> gamma = RandomNonZero<T>(kC, 13, 0.5, 1.5), beta = RandomNonZero<T>(kC, 14, -0.5, 0.5);
  for (int c = 0; c < kC; ++c) {
    bn.weight().value(0, c) = gamma[c];
    bn.bias().value(0, c) = beta[c];
  }
  const nn::Tensor4<T> y_ref = bn.Forward(x);
  const nn::Tensor4<T> dx_ref = bn.Backward(dy);
  const nn::ChannelStats<T> whole = bn.last_stats();

  // Eigen's per-part statistics and their merge, for BnMergeStats.
  std::vector<nn::ChannelStats<T>> parts;
  const int64_t plane = int64_t{kH} * kW;
  int64_t first = 0;
  for (int64_t n : samples) {
    nn::Tensor4<T> part(static_cast<int>(n), kC, kH, kW);
    part.data = x.data.segment(first * kC * plane, n * kC * plane);
    parts.push_back(nn::ComputeChannelStats(part));
    first += n;
  }
  const nn::ChannelStats<T> merged_ref = nn::MergeChannelStats(std::span<const nn::ChannelStats<T>>(parts));

  const Buf d_x(ToStd(x.data)), d_dy(ToStd(dy.data)), d_gamma(gamma), d_beta(beta);
  auto means = Poisoned<B, T>(world * kC), m2s = Poisoned<B, T>(world * kC);
  std::vector<int64_t> counts;
  first = 0;
  for (int r = 0; r < world; ++r) {
    counts.push_back(samples[r] * plane);
    b.BnLocalStats(d_x.get() + first * kC * plane, NchwShape{samples[r], kC, plane}, means.get() + r * kC,
                   m2s.get() + r * kC);
    first += samples[r];
  }
  auto mean = Poisoned<B, T>(kC), m2 = Poisoned<B, T>(kC), invstd = Poisoned<B, T>(kC);
  const int64_t total = b.BnMergeStats(std::span<const int64_t>(counts), means.get(), m2s.get(), kC, mean.get(),
                                       m2.get());
  ASSERT_EQ(total, whole.count);
  b.BnFinalizeStats(mean.get(), m2.get(), total, kC, kCaseEps, kCaseMomentum, invstd.get(), static_cast<T*>(nullptr),
                    static_cast<T*>(nullptr));
  auto y = Poisoned<B, T>(x.Size()), dx = Poisoned<B, T>(x.Size());
  auto sums = Poisoned<B, T>(2 * world * kC);  // per rank: sum_dy (C), sum_dy_xhat (C)
  first = 0;
  for (int r = 0; r < world; ++r) {
    const NchwShape part{samples[r], kC, plane};
    const int64_t off = first * kC * plane;
    b.BnNormalize(d_x.get() + off, part, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get() + off);
    b.BnLocalGradSums(d_dy.get() + off, d_x.get() + off, part, mean.get(), invstd.get(), sums.get() + 2 * r * kC,
                      sums.get() + (2 * r + 1) * kC);
    first += samples[r];
  }
  b.Sync();
  // The all-reduce (sum in rank order), as the comm layer would do it.
  const std::vector<T> local = sums.ToHost();
  std::vector<T> global(2 * kC, T(0));
  for (int r = 0; r < world; ++r) {
    for (int k = 0; k < 2 * kC; ++k) global[k] += local[2 * r * kC + k];
  }
  const Buf d_global(global);
  first = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t off = first * kC * plane;
    b.BnInputGrad(d_dy.get() + off, d_x.get() + off, NchwShape{samples[r], kC, plane}, mean.get(), invstd.get(),
                  d_gamma.get(), d_global.get(), d_global.get() + kC, total, dx.get() + off);
    first += samples[r];
  }
  b.Sync();
  const std::vector<T> h_mean = mean.ToHost(), h_m2 = m2.ToHost();
  ExpectClose<B>(h_mean, merged_ref.mean, "BnMergeStats mean vs MergeChannelStats");
  ExpectClose<B>(h_m2, merged_ref.m2, "BnMergeStats M2 vs MergeChannelStats");
  ExpectClose<B>(h_mean, whole.mean, "SyncBN mean vs whole batch");
  ExpectClose<B>(h_m2, whole.m2, "SyncBN M2 vs whole batch");
  ExpectClose<B>(y.ToHost(), y_ref.data, "SyncBN y vs whole batch");
  ExpectClose<B>(dx.ToHost(), dx_ref.data, "SyncBN dx vs whole batch");
}

struct GroupCase {
  CaseShape s;
  int groups;
};

// Small groups; 8192-value groups (several blocks each, in chunks); N x C input.
inline const std::vector<GroupCase>& GroupNormCases() {
  static const std::vector<GroupCase> cases = {{{4, 6, 5, 7}, 3}, {{2, 4, 64, 64}, 2}, {{5, 8, 1, 1}, 4}};
  return cases;
}

template <typename B, typename T>
void GroupNormCase(B& b, const GroupCase& k) {
  using Buf = typename B::template Buffer<T>;
  const CaseShape& s = k.s;
  const nn::Tensor4<T> x = RandomTensor<T>(s.n, s.c, s.h, s.w, 21);
  const nn::Tensor4<T> dy = RandomTensor<T>(s.n, s.c, s.h, s.w, 22);
  const std::string tag = x.ShapeString() + " G=" + std::to_string(k.groups) + " ";
  nn::GroupNorm<T> gn(s.c, k.groups, kCaseEps);
  const std::vector<T> gamma = RandomNonZero<T>(s.c, 23, 0.5, 1.5), beta = RandomNonZero<T>(s.c, 24, -0.5, 0.5);
  for (int c = 0; c < s.c; ++c) {
    gn.weight().value(0, c) = gamma[c];
    gn.bias().value(0, c) = beta[c];
  }
  const nn::Tensor4<T> y_ref = gn.Forward(x);
  const nn::Tensor4<T> dx_ref = gn.Backward(dy);
  // Group statistics as group_norm.h computes them (two passes).
  const int64_t len = int64_t{s.c / k.groups} * s.h * s.w;
  nn::Vector<T> mean_ref(s.n * k.groups), invstd_ref(s.n * k.groups);
  for (int64_t ng = 0; ng < s.n * k.groups; ++ng) {
    const auto block = Eigen::Map<const nn::Vector<T>>(x.data.data() + ng * len, len);
    const T mean = block.mean();
    const T var = (block.array() - mean).square().mean();
    mean_ref[ng] = mean;
    invstd_ref[ng] = T(1) / std::sqrt(var + static_cast<T>(kCaseEps));
  }

  const NchwShape shape{s.n, s.c, int64_t{s.h} * s.w};
  const Buf d_x(ToStd(x.data)), d_dy(ToStd(dy.data)), d_gamma(gamma), d_beta(beta);
  auto y = Poisoned<B, T>(x.Size()), dx = Poisoned<B, T>(x.Size());
  auto mean = Poisoned<B, T>(s.n * k.groups), invstd = Poisoned<B, T>(s.n * k.groups);
  auto dgamma = Poisoned<B, T>(s.c), dbeta = Poisoned<B, T>(s.c);
  b.GnForward(d_x.get(), shape, k.groups, kCaseEps, d_gamma.get(), d_beta.get(), y.get(), mean.get(), invstd.get());
  b.GnBackward(d_dy.get(), d_x.get(), shape, k.groups, mean.get(), invstd.get(), d_gamma.get(), dx.get(),
               dgamma.get(), dbeta.get());
  b.Sync();
  const std::vector<T> h_mean = mean.ToHost(), h_invstd = invstd.ToHost();
  ExpectClose<B>(h_mean, mean_ref, tag + "GnForward mean");
  ExpectClose<B>(h_invstd, invstd_ref, tag + "GnForward invstd");
  ExpectClose<B>(y.ToHost(), y_ref.data, tag + "GnForward y");
  const GnBackwardRef ref =
      GnBackwardBounds(dy.data.data(), x.data.data(), shape, k.groups, h_mean.data(), h_invstd.data(), gamma.data());
  ExpectWithinBound<B>(dx.ToHost(), ref.dx, dx_ref.data, tag + "GnBackward dx");
  ExpectWithinBound<B>(dgamma.ToHost(), ref.dgamma, Row(gn.weight().grad), tag + "GnBackward dgamma");
  ExpectWithinBound<B>(dbeta.ToHost(), ref.dbeta, Row(gn.bias().grad), tag + "GnBackward dbeta");
}

}  // namespace ddp::cuda::testing
