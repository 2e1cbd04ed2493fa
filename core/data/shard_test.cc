#include "core/data/shard.h"

#include <cstdint>
#include <vector>

#include "core/data/sampler.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

TEST(ShardTest, StridedTakesEveryWthIndexWithoutPadding) {
  const RankShard r1 = ShardOf(10, 3, 1, ShardKind::kStrided, 7);
  EXPECT_EQ(r1.indices, (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(r1.padding, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(ShardOf(10, 3, 0, ShardKind::kStrided, 7).indices, (std::vector<int64_t>{0, 3, 6, 9}));
}

TEST(ShardTest, PaddedSamplerIsTheDistributedSamplersShare) {
  DistributedSamplerOptions so;
  so.num_replicas = 4;
  so.rank = 2;
  so.seed = 5;
  EXPECT_EQ(ShardOf(10, 4, 2, ShardKind::kPaddedSampler, 5).indices,
            DistributedSampler(10, so).Indices());
}

// N = 10 over W = 4: 12 slots, the last two (ranks 2 and 3, third position)
// repeat; every sample is held exactly once outside the padding.
TEST(ShardTest, PaddingMarksExactlyTheRepeats) {
  std::vector<int> held(10, 0);
  int repeats = 0;
  for (int r = 0; r < 4; ++r) {
    const RankShard s = ShardOf(10, 4, r, ShardKind::kPaddedSampler, 0);
    ASSERT_EQ(s.indices.size(), 3u);
    ASSERT_EQ(s.padding.size(), 3u);
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(s.padding[j], j == 2 && r >= 2) << "rank " << r << " position " << j;
      if (s.padding[j]) {
        ++repeats;
      } else {
        ++held[s.indices[j]];
      }
    }
  }
  EXPECT_EQ(repeats, 2);
  EXPECT_EQ(held, std::vector<int>(10, 1));
}

TEST(ShardTest, FewerSamplesThanRanksPadsWholeRanks) {
  EXPECT_EQ(ShardOf(2, 4, 3, ShardKind::kPaddedSampler, 0).padding, (std::vector<bool>{true}));
  EXPECT_EQ(ShardOf(2, 4, 1, ShardKind::kPaddedSampler, 0).padding, (std::vector<bool>{false}));
  EXPECT_TRUE(ShardOf(2, 4, 3, ShardKind::kStrided, 0).indices.empty());
}

}  // namespace
}  // namespace ddp::data
