// Runs everywhere. The elementwise norm bodies read and write in chunks of
// 16 bytes (chunk.h) and form each chunk's per-channel values once: this
// checks that a chunk of 4 floats or 2 doubles gives, bit for bit, what the
// same body gives one element at a time (the arithmetic of the kernels up to
// 23b0a6b), so the chunks change no output; and how the chunk width and the
// alignment check are chosen.
#include "core/cuda/chunk.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda/compare.h"
#include "core/cuda/norm_bodies.h"
#include "core/cuda/reduce.h"
#include "core/cuda/reduce_emulation.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

using M = FusedMulAdd;

TEST(Chunk, WidthIsTheWidestThatDividesTheRun) {
  EXPECT_EQ(ChunkWidth<float>(64), 4);
  EXPECT_EQ(ChunkWidth<float>(3136), 4);
  EXPECT_EQ(ChunkWidth<float>(63), 1);
  EXPECT_EQ(ChunkWidth<float>(2), 1);
  EXPECT_EQ(ChunkWidth<double>(2), 2);
  EXPECT_EQ(ChunkWidth<double>(35), 1);
  EXPECT_THROW(WithChunkWidth<float>(2, [](auto) {}), std::invalid_argument);
}

TEST(Chunk, AlignedOnlyWhenEveryPointerIs) {
  alignas(16) float a[8] = {};
  EXPECT_TRUE(AllAligned({a, a + 4}));
  EXPECT_FALSE(AllAligned({a, a + 1}));
}

template <typename T>
int64_t Differ(const std::vector<T>& a, const std::vector<T>& b) {
  int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n;
}

// Runs make(out) chunked at the widest width and at width 1: both must give
// the bits of `before(i)`, the body's per-element arithmetic as the kernels
// of 23b0a6b wrote it (every per-channel value read and formed per element).
template <typename T, typename Make, typename Before>
void ExpectChunksGiveScalarBits(int64_t total, int width, Make make, Before before, const std::string& what) {
  ASSERT_GT(width, 1) << what;
  std::vector<T> chunked(static_cast<std::size_t>(total)), scalar(chunked.size()), old(chunked.size());
  EmulateChunks<T>(total, width, make(chunked.data()));
  EmulateChunks<T>(total, 1, make(scalar.data()));
  for (int64_t i = 0; i < total; ++i) old[static_cast<std::size_t>(i)] = before(i);
  EXPECT_EQ(Differ(chunked, old), 0) << what << ": the chunked body changed bits";
  EXPECT_EQ(Differ(scalar, old), 0) << what << ": the one-element body changed bits";
}

template <typename T>
class ChunkBodies : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ChunkBodies, Scalars);

TYPED_TEST(ChunkBodies, ElementwiseBodiesGiveTheScalarBits) {
  using T = TypeParam;
  const NchwShape s{3, 6, 8 * 8};
  const int64_t groups = 3, len = s.c / groups * s.plane, segs = s.n * groups;
  const std::size_t n = static_cast<std::size_t>(s.Size()), c = static_cast<std::size_t>(s.c);
  const std::vector<T> x = testing::RandomNonZero<T>(n, 1, -3, 5), dy = testing::RandomNonZero<T>(n, 2, -1, 1);
  const std::vector<T> mean = testing::RandomNonZero<T>(c, 3, -1, 1), invstd = testing::RandomNonZero<T>(c, 4, 0.5, 2);
  const std::vector<T> gamma = testing::RandomNonZero<T>(c, 5, 0.5, 1.5), beta = testing::RandomNonZero<T>(c, 6, -0.5, 0.5);
  const std::vector<T> sum_dy = testing::RandomNonZero<T>(c, 7, -50, 50), sum_dy_xhat = testing::RandomNonZero<T>(c, 8, -50, 50);
  const std::vector<T> g_mean = testing::RandomNonZero<T>(segs, 9, -1, 1), g_invstd = testing::RandomNonZero<T>(segs, 10, 0.5, 2);
  const std::vector<T> md = testing::RandomNonZero<T>(segs, 11, -1, 1), mdx = testing::RandomNonZero<T>(segs, 12, -1, 1);
  const int width = ElementChunkWidth<T>(s);
  const IndexDivider ch = ChannelDivider(s), pl = PlaneDivider(s), ln = IndexDivider::For(len, s.Size());
  ExpectChunksGiveScalarBits<T>(s.Size(), width, [&](T* out) {
    return internal::Normalize<T, M>{x.data(), mean.data(), invstd.data(), gamma.data(), beta.data(), out, ch, pl};
  }, [&](int64_t i) {
    const int64_t k = i / s.plane % s.c;
    const T xhat = (x[i] - mean[k]) * invstd[k];
    return M::Apply(xhat, gamma[k], beta[k]);
  }, "Normalize");
  ExpectChunksGiveScalarBits<T>(s.Size(), width, [&](T* out) {
    return internal::InputGrad<T, M>{dy.data(),     x.data(),           mean.data(), invstd.data(), gamma.data(),
                                     sum_dy.data(), sum_dy_xhat.data(), T(3 * 64),   out,           ch,
                                     pl};
  }, [&](int64_t i) {
    const int64_t k = i / s.plane % s.c;
    const T xhat = (x[i] - mean[k]) * invstd[k];
    const T count = T(3 * 64);
    return M::Apply(-xhat, sum_dy_xhat[k] / count, dy[i] - sum_dy[k] / count) * (gamma[k] * invstd[k]);
  }, "InputGrad");
  ExpectChunksGiveScalarBits<T>(s.Size(), width, [&](T* out) {
    return internal::GroupNormalize<T, M>{x.data(), g_mean.data(), g_invstd.data(), gamma.data(), beta.data(),
                                          out,      ch,            pl,              ln};
  }, [&](int64_t i) {
    const int64_t k = i / s.plane % s.c, ng = i / len;
    const T xhat = (x[i] - g_mean[ng]) * g_invstd[ng];
    return M::Apply(xhat, gamma[k], beta[k]);
  }, "GroupNormalize");
  ExpectChunksGiveScalarBits<T>(s.Size(), width, [&](T* out) {
    return internal::GroupInputGrad<T, M>{dy.data(), x.data(), g_mean.data(), g_invstd.data(), gamma.data(),
                                          md.data(), mdx.data(), out,         ch,              pl,
                                          ln};
  }, [&](int64_t i) {
    const int64_t k = i / s.plane % s.c, ng = i / len;
    const T xhat = (x[i] - g_mean[ng]) * g_invstd[ng];
    return M::Apply(-xhat, mdx[ng], M::Apply(dy[i], gamma[k], -md[ng])) * g_invstd[ng];
  }, "GroupInputGrad");
}

// The reductions' pushes read a chunk (Load<V>) and push its elements
// (Push<V>): through the plan's order they must give, bit for bit, what
// pushing element k of the segment, indexed here independently, gives in
// the same order. Shapes with chunks of 4 floats / 2 doubles, several
// blocks per channel, and GroupNorm chunks that cross planes (261 values a
// plane, 4 planes a group).
template <typename T, typename Acc, typename Push, typename Element>
void ExpectChunkPushGivesElementBits(int64_t segments, int64_t length, const ReducePlan& plan, const Push& push,
                                     Element element, const std::string& what) {
  ASSERT_GT(plan.width, 1) << what;
  std::vector<Acc> chunked, elementwise;
  EmulateReduceSegments<Acc>(segments, length, plan, push, [&](int64_t, const Acc& a) { chunked.push_back(a); });
  for (int64_t s = 0; s < segments; ++s) {
    elementwise.push_back(EmulateSegmentReduce<Acc>(length, plan, [&](Acc& a, int64_t k) { element(a, s, k); }));
  }
  ASSERT_EQ(chunked.size(), elementwise.size());
  int64_t differ = 0;
  for (std::size_t s = 0; s < chunked.size(); ++s) differ += std::memcmp(&chunked[s], &elementwise[s], sizeof(Acc)) != 0;
  EXPECT_EQ(differ, 0) << what << ": " << plan.blocks << " blocks, width " << plan.width;
}

TYPED_TEST(ChunkBodies, ReductionPushesGiveTheElementBits) {
  using T = TypeParam;
  using W = WelfordAcc<T, M>;
  using P = SumPairAcc<T, M>;
  const NchwShape s{16, 4, 32 * 32};
  const int64_t n = s.n * s.plane;
  const std::size_t size = static_cast<std::size_t>(s.Size());
  const std::vector<T> x = testing::RandomNonZero<T>(size, 1, -3, 5), dy = testing::RandomNonZero<T>(size, 2, -1, 1);
  const std::vector<T> mean = testing::RandomNonZero<T>(64, 3, -1, 1), invstd = testing::RandomNonZero<T>(64, 4, 1, 2);
  const std::vector<T> gamma = testing::RandomNonZero<T>(8, 5, 0.5, 1.5);
  const auto at = [&](int64_t ch, int64_t k) { return (k / s.plane * s.c + ch) * s.plane + k % s.plane; };
  const ReducePlan channel = ChannelPlan<T>(s);
  EXPECT_GT(channel.blocks, 1);
  ExpectChunkPushGivesElementBits<T, W>(s.c, n, channel,
      internal::ChannelWelfordPush<T, M>{x.data(), s.c, PlaneDivider(s)},
      [&](W& a, int64_t ch, int64_t k) { a.Push(x[at(ch, k)]); }, "ChannelWelfordPush");
  ExpectChunkPushGivesElementBits<T, P>(s.c, n, channel,
      internal::ChannelGradPush<T, M>{dy.data(), x.data(), mean.data(), s.c, PlaneDivider(s)},
      [&](P& a, int64_t ch, int64_t k) { a.Push(dy[at(ch, k)], x[at(ch, k)] - mean[ch], dy[at(ch, k)]); },
      "ChannelGradPush");
  ExpectChunkPushGivesElementBits<T, P>(s.c, n, channel,
      internal::GroupParamGradPush<T, M>{dy.data(), x.data(), mean.data(), invstd.data(), s.c, 2, 2, PlaneDivider(s)},
      [&](P& a, int64_t ch, int64_t k) {
        const int64_t ng = k / s.plane * 2 + ch / 2;
        a.Push(dy[at(ch, k)], (x[at(ch, k)] - mean[ng]) * invstd[ng], dy[at(ch, k)]);
      }, "GroupParamGradPush");

  const NchwShape g{3, 8, 9 * 29};  // 2 groups of 4 planes: 1,044 values
  const int64_t groups = 2, cpg = 4, len = cpg * g.plane;
  const ReducePlan group = GroupPlan<T>(g, groups);
  ExpectChunkPushGivesElementBits<T, W>(g.n * groups, len, group, internal::GroupWelfordPush<T, M>{x.data(), len},
      [&](W& a, int64_t ng, int64_t k) { a.Push(x[ng * len + k]); }, "GroupWelfordPush");
  ExpectChunkPushGivesElementBits<T, P>(g.n * groups, len, group,
      internal::GroupGradPush<T, M>{dy.data(), x.data(), mean.data(), gamma.data(), groups, cpg, PlaneDivider(g), len},
      [&](P& a, int64_t ng, int64_t k) {
        const T d = dy[ng * len + k] * gamma[(ng % groups) * cpg + k / g.plane];
        a.Push(d, x[ng * len + k] - mean[ng], d);
      }, "GroupGradPush");
}

}  // namespace
}  // namespace ddp::cuda
