// The kernels' reduction (reduce.h: Welford per thread, Chan merges in a fixed
// block tree and block order), run on the host in the kernels' exact order,
// against core/nn at the kernels' tolerances. Runs without a GPU; the gpu
// tests (norm_kernels_test) then check the kernels themselves.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/cuda/chunk.h"
#include "core/cuda/compare.h"
#include "core/cuda/norm_bodies.h"
#include "core/cuda/reduce.h"
#include "core/cuda/reduce_emulation.h"
#include "core/nn/batch_norm.h"
#include "core/nn/channel_stats.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

using testing::kTolerance;
using testing::RandomTensor;
using testing::RelError;

struct Shape {
  int n, c, h, w;
};

// Per-channel statistics the way BnLocalStats computes them.
template <typename T>
nn::ChannelStats<T> EmulatedStats(const nn::Tensor4<T>& x) {
  nn::ChannelStats<T> s = nn::ChannelStats<T>::Empty(x.c);
  const int64_t plane = x.PlaneSize();
  const int64_t length = int64_t{x.n} * plane;
  s.count = length;
  for (int c = 0; c < x.c; ++c) {
    const ReducePlan plan = PlanReduce(x.c, length, ChunkWidth<T>(plane));
    const auto acc = EmulateSegmentReduce<WelfordAcc<T>>(length, plan, [&](WelfordAcc<T>& a, int64_t k) {
      a.Push(x.data[(k / plane * x.c + c) * plane + k % plane]);
    });
    EXPECT_EQ(acc.count, length);
    s.mean[c] = acc.mean;
    s.m2[c] = acc.m2;
  }
  return s;
}

template <typename T>
class ReduceEmulationTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ReduceEmulationTest, Scalars);

// The plans core/cuda/README.md's design note gives ("Per kernel").
TEST(ReducePlan, BlocksPerSegmentAsTheDesignNoteSays) {
  const NchwShape large{32, 256, 56 * 56};
  EXPECT_EQ(ChannelPlan<float>(large).width, 4);
  EXPECT_EQ(ChannelPlan<float>(large).blocks, 25);   // 25,088 chunks, ~4 a thread
  EXPECT_EQ(ChannelPlan<double>(large).width, 2);
  EXPECT_EQ(ChannelPlan<double>(large).blocks, 49);
  EXPECT_EQ(GroupPlan<float>(large, 32).blocks, 7);  // groups of 25,088 values
  EXPECT_EQ(GroupPlan<double>(large, 32).blocks, 13);
  // Few segments: more blocks, each thread keeping at least 2 chunks.
  EXPECT_EQ(ChannelPlan<float>(NchwShape{32, 16, 56 * 56}).blocks, 49);
  for (const int64_t n : {2, 8, 32}) {  // the small shapes: one block a segment
    const NchwShape small{n, 16, 64};
    EXPECT_EQ(ChannelPlan<float>(small).blocks, 1) << n;
    EXPECT_EQ(ChannelPlan<double>(small).blocks, 1) << n;
    EXPECT_EQ(GroupPlan<float>(small, 8).blocks, 1) << n;
  }
  EXPECT_EQ(ChannelPlan<float>(NchwShape{32, 16, 64}).width, 4);  // 2,048 values
  EXPECT_EQ(ChannelPlan<float>(NchwShape{8, 16, 64}).width, 1);   // 512: under a chunk a thread
  EXPECT_EQ(GroupPlan<double>(NchwShape{5, 8, 1}, 4).width, 1);    // 2-value groups
  EXPECT_EQ(ChannelPlan<float>(NchwShape{5, 6, 63}).width, 1);    // 7x9 planes: scalar
  EXPECT_EQ(PlanReduce(1, 0, 4).blocks, 1);
  EXPECT_EQ(PlanReduce(1, int64_t{1} << 30, 4).blocks, kMaxBlocksPerSegment);
}

TEST(ReducePlan, LegacyPlanIsBd4d2aasForTheDiagnosis) {
  EXPECT_EQ(LegacyPlanReduce(0).blocks, 1);
  EXPECT_EQ(LegacyPlanReduce(315).blocks, 1);
  EXPECT_EQ(LegacyPlanReduce(16384).blocks, 16);
  EXPECT_EQ(LegacyPlanReduce(16384).width, 1);
  EXPECT_EQ(LegacyPlanReduce(int64_t{1} << 30).blocks, kMaxBlocksPerSegment);
}

TYPED_TEST(ReduceEmulationTest, WelfordChanStatsEqualTwoPassStats) {
  using T = TypeParam;
  for (const Shape& s : {Shape{5, 6, 7, 9}, Shape{16, 3, 32, 32}, Shape{3, 2, 1, 1}}) {
    const nn::Tensor4<T> x = RandomTensor<T>(s.n, s.c, s.h, s.w, 11);
    const nn::ChannelStats<T> ref = nn::ComputeChannelStats(x);
    const nn::ChannelStats<T> got = EmulatedStats(x);
    const double e_mean = RelError(testing::ToStd(got.mean), ref.mean);
    const double e_m2 = RelError(testing::ToStd(got.m2), ref.m2);
    std::printf("[emulation] %s %s: mean %.3g, M2 %.3g\n", sizeof(T) == 4 ? "float" : "double",
                x.ShapeString().c_str(), e_mean, e_m2);
    EXPECT_EQ(got.count, ref.count);
    EXPECT_LT(e_mean, kTolerance<T>) << x.ShapeString();
    EXPECT_LT(e_m2, kTolerance<T>) << x.ShapeString();
  }
}

TYPED_TEST(ReduceEmulationTest, SumPairGradSumsEqualBatchNormLocalGradSums) {
  using T = TypeParam;
  const nn::Tensor4<T> x = RandomTensor<T>(16, 3, 32, 32, 21);
  const nn::Tensor4<T> dy = RandomTensor<T>(16, 3, 32, 32, 22);
  nn::BatchNorm<T> bn(3);
  bn.Forward(x);
  const nn::ChannelGradSums<T> ref = bn.LocalGradSums(dy);
  const nn::ChannelStats<T> stats = bn.last_stats();
  const int64_t plane = x.PlaneSize();
  const int64_t length = int64_t{x.n} * plane;
  std::vector<T> sum_dy(3), sum_dy_xhat(3);
  for (int c = 0; c < 3; ++c) {
    const T invstd = T(1) / std::sqrt(stats.m2[c] / static_cast<T>(stats.count) + T(1e-5));
    const ReducePlan plan = PlanReduce(3, length, ChunkWidth<T>(plane));
    const auto acc = EmulateSegmentReduce<SumPairAcc<T>>(length, plan, [&](SumPairAcc<T>& a, int64_t k) {
      const int64_t i = (k / plane * x.c + c) * plane + k % plane;
      a.Push(dy.data[i], (x.data[i] - stats.mean[c]) * invstd, dy.data[i]);
    });
    sum_dy[c] = acc.a;
    sum_dy_xhat[c] = acc.b;
  }
  EXPECT_LT(RelError(sum_dy, ref.sum_dy), kTolerance<T>);
  EXPECT_LT(RelError(sum_dy_xhat, ref.sum_dy_xhat), kTolerance<T>);
}

// Why Welford/Chan and not raw sums: float values 1e4 + U(-1, 1). The
// emulated kernel keeps M2 to 1e-3 of the exact (double) value; the raw-sum
// formula sum x^2 - (sum x)^2 / n loses every digit.
TEST(ReduceEmulation, WelfordKeepsDigitsWhereRawSumsCancel) {
  const nn::Tensor4<float> x = RandomTensor<float>(4, 1, 32, 32, 31);
  nn::Tensor4<float> shifted = x;
  shifted.data.array() += 1e4f;
  nn::Tensor4<double> exact(4, 1, 32, 32);
  exact.data = shifted.data.cast<double>();
  const double m2_exact = nn::ComputeChannelStats(exact).m2[0];
  const double m2_welford = EmulatedStats(shifted).m2[0];
  float sum = 0, sum_sq = 0;
  for (float v : shifted.data) {
    sum += v;
    sum_sq += v * v;
  }
  const double m2_raw = sum_sq - sum * sum / static_cast<float>(shifted.data.size());
  const double e_welford = std::abs(m2_welford - m2_exact) / m2_exact;
  const double e_raw = std::abs(m2_raw - m2_exact) / m2_exact;
  std::printf("[emulation] mean 1e4, std 0.58, float: Welford/Chan M2 rel error %.3g, raw sums %.3g\n", e_welford,
              e_raw);
  EXPECT_LT(e_welford, 1e-3);
  EXPECT_GT(e_raw, 0.1);
}

}  // namespace
}  // namespace ddp::cuda
