#include "core/data/digits.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gtest/gtest.h"

namespace ddp::data {
namespace {

TEST(Digits, AllImagesWithSklearnsFirstImageAndClassCounts) {
  Digits all({});
  ASSERT_EQ(all.Size(), 1797);
  EXPECT_EQ(all.NumClasses(), 10);
  EXPECT_EQ(all.FeatureDim(), 64);
  // sklearn: load_digits().images[0][0] == [0, 0, 5, 13, 9, 1, 0, 0], target[0] == 0.
  const std::vector<int> first_row = {0, 0, 5, 13, 9, 1, 0, 0};
  EXPECT_EQ(std::vector<int>(Digits::Pixels(0).begin(), Digits::Pixels(0).begin() + 8), first_row);
  EXPECT_EQ(Digits::Label(0), 0);
  EXPECT_EQ(Digits::Label(1796), 8);
  int per_class[10] = {};
  for (int64_t i = 0; i < all.Size(); ++i) ++per_class[all.Get(i).label];
  // sklearn's class counts.
  const int want[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(per_class[k], want[k]) << k;
  EXPECT_DOUBLE_EQ(all.Get(0).x[3], 13.0 / 16);
}

TEST(Digits, NoiseIsPerImageDeterministicAndHasItsSd) {
  Digits a({.indices = {5, 7}, .noise = 0.3, .noise_seed = 9});
  Digits b({.indices = {7}, .noise = 0.3, .noise_seed = 9});
  Digits c({.indices = {7}, .noise = 0.3, .noise_seed = 10});
  EXPECT_EQ(a.Get(1).x, b.Get(0).x);  // same image, same seed: same noise in any subset
  EXPECT_NE(b.Get(0).x, c.Get(0).x);
  Digits clean({});
  Digits noisy({.indices = {}, .noise = 0.3, .noise_seed = 1});
  double sum = 0, sq = 0;
  int n = 0;
  for (int64_t i = 0; i < 1797; ++i) {
    // Evaluated here: an `auto` Eigen expression would keep references to the
    // two temporary Samples, dead at the end of this statement.
    const Eigen::VectorXd d = noisy.Get(i).x - clean.Get(i).x;
    sum += d.sum();
    sq += d.squaredNorm();
    n += 64;
  }
  EXPECT_NEAR(sum / n, 0, 0.005);
  EXPECT_NEAR(std::sqrt(sq / n), 0.3, 0.005);
}

TEST(Digits, SplitIsADisjointCoverAndFixedBySeed) {
  const auto [train, val] = DigitsSplit(500, 0);
  EXPECT_EQ(train.size(), 1297u);
  EXPECT_EQ(val.size(), 500u);
  std::set<int64_t> all(train.begin(), train.end());
  all.insert(val.begin(), val.end());
  EXPECT_EQ(all.size(), 1797u);
  EXPECT_EQ(DigitsSplit(500, 0), DigitsSplit(500, 0));
  EXPECT_NE(DigitsSplit(500, 1).second, val);
  EXPECT_THROW(DigitsSplit(0, 0), std::invalid_argument);
  EXPECT_THROW(Digits({.indices = {1797}}), std::invalid_argument);
}

}  // namespace
}  // namespace ddp::data
