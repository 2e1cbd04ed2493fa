// BatchNorm's statistics representation, its merge, and its hooks: that a
// BatchNorm whose hooks merge across participants (what SyncBatchNorm does
// with a collective) equals one BatchNorm over the whole batch.
#include <array>
#include <cmath>
#include <vector>

#include "core/nn/batch_norm.h"
#include "core/nn/gradcheck.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

using gradcheck::RandomTensor;
using gradcheck::RelErr;

// Samples [begin, end) of x.
Tensor4<double> Slice(const Tensor4<double>& x, int begin, int end) {
  Tensor4<double> out(end - begin, x.c, x.h, x.w);
  const int64_t per_sample = int64_t{x.c} * x.h * x.w;
  out.data = x.data.segment(begin * per_sample, (end - begin) * per_sample);
  return out;
}

TEST(ChannelStats, ComputeMatchesDefinition) {
  Tensor4<double> x(2, 2, 1, 2);
  x.data << 1, 2, 10, 20, 3, 4, 30, 40;  // channel 0: 1 2 3 4; channel 1: 10 20 30 40
  const ChannelStats<double> s = ComputeChannelStats(x);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(s.mean[1], 25.0);
  EXPECT_DOUBLE_EQ(s.m2[0], 5.0);
  EXPECT_DOUBLE_EQ(s.m2[1], 500.0);
}

TEST(ChannelStats, MergeOfUnequalAndEmptyPartsEqualsWhole) {
  Rng rng(21);
  const Tensor4<double> x = RandomTensor(9, 3, 2, 2, rng, 3.0);
  const ChannelStats<double> whole = ComputeChannelStats(x);
  // Participants with 4, 0, 1 and 4 samples, in two orders.
  const std::vector<ChannelStats<double>> parts{ComputeChannelStats(Slice(x, 0, 4)), ComputeChannelStats(Slice(x, 4, 4)),
                                                ComputeChannelStats(Slice(x, 4, 5)), ComputeChannelStats(Slice(x, 5, 9))};
  EXPECT_EQ(parts[1].count, 0);
  const std::vector<ChannelStats<double>> reversed(parts.rbegin(), parts.rend());
  for (const auto* list : {&parts, &reversed}) {
    const ChannelStats<double> merged = MergeChannelStats(std::span<const ChannelStats<double>>(*list));
    EXPECT_EQ(merged.count, whole.count);
    EXPECT_LT(RelErr(merged.mean, whole.mean), 1e-14);
    EXPECT_LT(RelErr(merged.m2, whole.m2), 1e-14);
  }
  // All parts empty: count 0, and BatchNorm would refuse to train on it.
  const std::vector<ChannelStats<double>> empty{ChannelStats<double>::Empty(3), ChannelStats<double>::Empty(3)};
  EXPECT_EQ(MergeChannelStats(std::span<const ChannelStats<double>>(empty)).count, 0);
}

TEST(ChannelStats, MergeRejectsMismatchedChannels) {
  const std::vector<ChannelStats<double>> parts{ChannelStats<double>::Empty(3), ChannelStats<double>::Empty(2)};
  EXPECT_THROW(MergeChannelStats(std::span<const ChannelStats<double>>(parts)), std::invalid_argument);
  EXPECT_THROW(MergeChannelStats(std::span<const ChannelStats<double>>()), std::invalid_argument);
}

// A channel with mean 1e9 and spread 1: (count, mean, M2) with Chan's merge
// keeps the variance exact, where raw sums (sum x, sum x^2) lose every digit.
TEST(ChannelStats, LargeMeanKeepsPrecision) {
  Tensor4<double> x(10, 1, 1, 1);
  for (int i = 0; i < 10; ++i) x.data[i] = 1e9 + i;  // exact in double; variance (biased) 8.25
  const std::vector<ChannelStats<double>> parts{ComputeChannelStats(Slice(x, 0, 3)), ComputeChannelStats(Slice(x, 3, 3)),
                                                ComputeChannelStats(Slice(x, 3, 10))};
  const ChannelStats<double> merged = MergeChannelStats(std::span<const ChannelStats<double>>(parts));
  EXPECT_LT(std::abs(merged.m2[0] / 10 - 8.25) / 8.25, 1e-12);
  EXPECT_LT(std::abs(merged.mean[0] - (1e9 + 4.5)), 1e-6);
  // The raw-sums formula on the same data, for contrast: it is far off.
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < 10; ++i) {
    sum += x.data[i];
    sum_sq += x.data[i] * x.data[i];
  }
  const double naive_var = sum_sq / 10 - (sum / 10) * (sum / 10);
  EXPECT_GT(std::abs(naive_var - 8.25) / 8.25, 0.1) << "naive variance " << naive_var;
}

TEST(BatchNorm, TrainingNeedsMoreThanOneValuePerChannel) {
  BatchNorm<double> bn(2);
  EXPECT_THROW(bn.Forward(Tensor4<double>(1, 2, 1, 1)), std::invalid_argument);
  EXPECT_NO_THROW(bn.Forward(Tensor4<double>(1, 2, 1, 2)));  // 2 values per channel
  bn.SetTraining(false);
  EXPECT_NO_THROW(bn.Forward(Tensor4<double>(1, 2, 1, 1)));  // eval: running stats
  EXPECT_THROW(bn.Forward(Tensor4<double>(2, 3, 1, 1)), std::invalid_argument);  // wrong channels
}

TEST(BatchNorm, HooksRunOnlyInTrainingAndAreChecked) {
  int stats_calls = 0, grad_calls = 0;
  BatchNormHooks<double> hooks{
      [&](const ChannelStats<double>& local) { ++stats_calls; return local; },
      [&](const ChannelGradSums<double>& local) { ++grad_calls; return local; }};
  BatchNorm<double> bn(2, {}, hooks);
  Rng rng(22);
  const Tensor4<double> x = RandomTensor(3, 2, 2, 2, rng);
  bn.Backward(bn.Forward(x));
  EXPECT_EQ(stats_calls, 1);
  EXPECT_EQ(grad_calls, 1);
  bn.SetTraining(false);
  bn.Backward(bn.Forward(x));
  EXPECT_EQ(stats_calls, 1);
  EXPECT_EQ(grad_calls, 1);

  BatchNorm<double> bad(2, {}, {[](const ChannelStats<double>&) { return ChannelStats<double>::Empty(3); }, {}});
  EXPECT_THROW(bad.Forward(x), std::runtime_error);
}

// Three participants holding 3, 0 and 4 samples of one batch, each running a
// BatchNorm whose hooks merge the participants' statistics and gradient sums
// (in-process stand-ins for SyncBatchNorm's collectives). Outputs, input
// gradients, summed parameter gradients and running statistics over three
// steps must equal one BatchNorm on the whole batch.
TEST(BatchNorm, MergedParticipantsEqualWholeBatch) {
  constexpr int kC = 3;
  const std::array<int, 4> bounds{0, 3, 3, 7};
  const BatchNormOptions opts{.momentum = 0.3, .eps = 1e-5};
  Rng rng(23);
  BatchNorm<double> whole(kC, opts);
  whole.weight().value << 1.5, 0.5, -1.0;
  whole.bias().value << 0.1, -0.2, 0.3;

  std::vector<ChannelStats<double>> locals(3);
  std::vector<ChannelGradSums<double>> local_sums(3);
  std::vector<std::unique_ptr<BatchNorm<double>>> parts;
  for (int r = 0; r < 3; ++r) {
    BatchNormHooks<double> hooks{
        [&locals, r](const ChannelStats<double>& local) {
          EXPECT_EQ(local.count, locals[r].count);  // the hook sees this participant's own stats
          return MergeChannelStats(std::span<const ChannelStats<double>>(locals));
        },
        [&local_sums](const ChannelGradSums<double>&) {
          return SumChannelGradSums(std::span<const ChannelGradSums<double>>(local_sums));
        }};
    parts.push_back(std::make_unique<BatchNorm<double>>(kC, opts, hooks));
    parts.back()->weight().value = whole.weight().value;
    parts.back()->bias().value = whole.bias().value;
  }

  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    Tensor4<double> x = RandomTensor(7, kC, 2, 3, rng, 2.0);
    for (int c = 0; c < kC; ++c) {  // channel means far from zero
      for (int n = 0; n < 7; ++n) Eigen::Map<Vector<double>>(x.Plane(n, c), 6).array() += 100.0 * (c + 1);
    }
    const Tensor4<double> dy = RandomTensor(7, kC, 2, 3, rng);
    ZeroGrads(whole.Params());
    const Tensor4<double> y = whole.Forward(x);
    const Tensor4<double> dx = whole.Backward(dy);

    for (int r = 0; r < 3; ++r) locals[r] = ComputeChannelStats(Slice(x, bounds[r], bounds[r + 1]));
    std::vector<Tensor4<double>> ys(3);
    for (int r = 0; r < 3; ++r) ys[r] = parts[r]->Forward(Slice(x, bounds[r], bounds[r + 1]));
    for (int r = 0; r < 3; ++r) local_sums[r] = parts[r]->LocalGradSums(Slice(dy, bounds[r], bounds[r + 1]));
    Matrix<double> dgamma = Matrix<double>::Zero(1, kC), dbeta = Matrix<double>::Zero(1, kC);
    for (int r = 0; r < 3; ++r) {
      ZeroGrads(parts[r]->Params());
      const Tensor4<double> dxr = parts[r]->Backward(Slice(dy, bounds[r], bounds[r + 1]));
      EXPECT_LT(RelErr(ys[r].data, Slice(y, bounds[r], bounds[r + 1]).data), 1e-10) << "y of participant " << r;
      EXPECT_LT(RelErr(dxr.data, Slice(dx, bounds[r], bounds[r + 1]).data), 1e-10) << "dx of participant " << r;
      EXPECT_EQ(ys[r].n, bounds[r + 1] - bounds[r]);
      dgamma += parts[r]->weight().grad;
      dbeta += parts[r]->bias().grad;
      EXPECT_LT(RelErr(parts[r]->running_mean(), whole.running_mean()), 1e-10);
      EXPECT_LT(RelErr(parts[r]->running_var(), whole.running_var()), 1e-10);
    }
    EXPECT_LT(RelErr(dgamma, whole.weight().grad), 1e-10);
    EXPECT_LT(RelErr(dbeta, whole.bias().grad), 1e-10);
  }
  // And without the hooks the participants really differ (the test can fail).
  BatchNorm<double> local_only(kC, opts);
  Tensor4<double> x = RandomTensor(7, kC, 2, 3, rng, 2.0);
  EXPECT_GT(RelErr(local_only.Forward(Slice(x, 0, 3)).data, whole.Forward(x).data.head(3 * kC * 6)), 1e-3);
}

}  // namespace
}  // namespace ddp::nn
