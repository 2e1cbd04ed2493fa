// DistributedSampler properties that the DDP bugs rely on (the pairs'
// READMEs state them), independent of the golden file.
#include <algorithm>
#include <set>

#include "core/data/sampler.h"
#include "core/data/torch_randperm.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

std::vector<int64_t> RankIndices(int64_t n, int64_t w, int64_t r, bool shuffle, bool drop_last,
                                 int64_t epoch = 0, int64_t seed = 0) {
  DistributedSampler s(n, {.num_replicas = w, .rank = r, .shuffle = shuffle, .seed = seed,
                           .drop_last = drop_last});
  s.SetEpoch(epoch);
  return s.Indices();
}

TEST(DistributedSampler, PadsToEqualCountsN1003W2) {
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(RankIndices(1003, 2, r, true, false).size(), 502u);
    EXPECT_EQ(RankIndices(1003, 2, r, true, true).size(), 501u);
  }
  // The one padded position repeats the first index of the permutation.
  const auto perm = TorchRandperm(1003, 0);
  EXPECT_EQ(RankIndices(1003, 2, 1, true, false).back(), perm[0]);
}

TEST(DistributedSampler, PaddingRepeatsSeveralTimesWhenNSmallerThanW) {
  // N=3, W=8, no shuffle: 0 1 2 0 1 2 0 1 -> rank r gets r % 3.
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(RankIndices(3, 8, r, false, false), std::vector<int64_t>{r % 3});
    EXPECT_TRUE(RankIndices(3, 8, r, false, true).empty());
  }
  EXPECT_TRUE(RankIndices(0, 4, 3, true, false).empty());
}

TEST(DistributedSampler, RanksPartitionTheDatasetWhenDivisible) {
  std::multiset<int64_t> all;
  for (int r = 0; r < 4; ++r) {
    for (int64_t i : RankIndices(1000, 4, r, true, false, 3)) all.insert(i);
  }
  ASSERT_EQ(all.size(), 1000u);
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(all.count(i), 1u) << i;
}

TEST(DistributedSampler, WithoutSetEpochEveryEpochIsTheSame) {
  DistributedSampler s(100, {.num_replicas = 2, .rank = 0});
  const auto first = s.Indices();
  EXPECT_EQ(s.Indices(), first);  // "epoch 2" without set_epoch
  s.SetEpoch(1);
  EXPECT_NE(s.Indices(), first);
  s.SetEpoch(0);
  EXPECT_EQ(s.Indices(), first);
}

TEST(DistributedSampler, DifferentSeedsPerRankOverlap) {
  // The missing_set_epoch bug: each rank seeds its own sampler differently,
  // so shards overlap instead of partitioning the data.
  const auto a = RankIndices(100, 2, 0, true, false, 0, /*seed=*/0);
  const auto b = RankIndices(100, 2, 1, true, false, 0, /*seed=*/1);
  std::set<int64_t> sa(a.begin(), a.end());
  int overlap = 0;
  for (int64_t i : b) overlap += sa.count(i) > 0;
  EXPECT_GT(overlap, 0);
}

TEST(DistributedSampler, RejectsBadRankWithTorchMessage) {
  try {
    DistributedSampler s(10, {.num_replicas = 4, .rank = 4});
    FAIL() << "accepted rank 4 of 4";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Invalid rank 4, rank should be in the interval [0, 3]");
  }
  EXPECT_THROW(DistributedSampler(-1, {.num_replicas = 1, .rank = 0}), std::invalid_argument);
}

TEST(TorchRandperm, SeedReduction) {
  EXPECT_EQ(TorchGeneratorSeed(7), 7u);
  EXPECT_EQ(TorchGeneratorSeed(-1), 0xffffffffu);
  EXPECT_EQ(TorchGeneratorSeed((int64_t{1} << 32) + 7), 7u);
  EXPECT_EQ(TorchGeneratorSeed(INT64_MAX, 5), 4u);  // 2^63 + 4 is still valid
  EXPECT_THROW(TorchGeneratorSeed(INT64_MIN, -1), std::invalid_argument);
  EXPECT_THROW(TorchRandperm(-1, 0), std::invalid_argument);
  EXPECT_THROW(TorchRandperm(kMaxRandpermN + 1, 0), std::invalid_argument);
}

TEST(TorchRandperm, IsAPermutation) {
  auto r = TorchRandperm(1003, 9);
  std::sort(r.begin(), r.end());
  for (int64_t i = 0; i < 1003; ++i) ASSERT_EQ(r[i], i);
}

}  // namespace
}  // namespace ddp::data
