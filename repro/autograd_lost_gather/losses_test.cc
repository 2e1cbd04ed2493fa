// The two losses' gradients against central finite differences, and the
// meaning of InfoNCE's key-gradient mask (the one-process prediction of a
// lost gather) checked against separately computed per-group losses.
#include "repro/autograd_lost_gather/losses.h"

#include <cmath>
#include <vector>

#include "core/nn/gradcheck.h"
#include "gtest/gtest.h"
#include "repro/autograd_lost_gather/task.h"

namespace ddp::autograd_lost_gather {
namespace {

using nn::gradcheck::NumericGrad;
using nn::gradcheck::RandomMatrix;
using nn::gradcheck::RelErr;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(SoftAuc, GradientMatchesFiniteDifferences) {
  nn::Rng rng(1);
  Mat s = RandomMatrix(9, 1, rng);
  const std::vector<int> labels = {1, 0, 0, 1, 1, 0, 1, 0, 0};
  const LossGrad lg = SoftAuc(s, labels);
  const auto num = NumericGrad(s.data(), s.size(), [&] { return SoftAuc(s, labels).value; });
  EXPECT_LT(RelErr(lg.d_first, num), 1e-8);
  EXPECT_GT(lg.value, 0);
}

TEST(SoftAuc, RejectsOneClassAndBadShapes) {
  const Mat s = Mat::Zero(3, 1);
  const std::vector<int> one_class = {1, 1, 1};
  EXPECT_THROW(SoftAuc(s, one_class), std::invalid_argument);
  const std::vector<int> short_labels = {1, 0};
  EXPECT_THROW(SoftAuc(s, short_labels), std::invalid_argument);
}

TEST(InfoNce, GradientsMatchFiniteDifferences) {
  nn::Rng rng(2);
  Mat a = RandomMatrix(5, 4, rng);
  Mat k = RandomMatrix(7, 4, rng);
  const std::vector<int64_t> pos = {3, 0, 6, 1, 2};
  const double tau = 0.5, scale = 0.3;
  const LossGrad lg = InfoNce(a, k, pos, tau, scale);
  const auto da = NumericGrad(a.data(), a.size(), [&] { return InfoNce(a, k, pos, tau, scale).value; });
  const auto dk = NumericGrad(k.data(), k.size(), [&] { return InfoNce(a, k, pos, tau, scale).value; });
  EXPECT_LT(RelErr(lg.d_first, da), 1e-7);
  EXPECT_LT(RelErr(lg.d_second, dk), 1e-7);
}

// mask(i, j) = group(i) == group(j) must equal the sum over groups of the
// loss of that group's anchors, keeping only the key gradients of the
// group's own keys: what W ranks that re-insert their own slot compute.
TEST(InfoNce, OwnGroupMaskEqualsPerGroupLossesWithOwnKeysOnly) {
  nn::Rng rng(3);
  const Mat a = RandomMatrix(6, 3, rng);
  const Mat k = RandomMatrix(6, 3, rng);
  const std::vector<int> group = {0, 0, 1, 1, 1, 2};
  const LossGrad masked = InfoNce(a, k, Iota(6), 0.7, 1.0,
                                  [&](int64_t i, int64_t j) { return group[i] == group[j]; });
  Mat expect_dk = Mat::Zero(6, 3);
  Mat expect_da = Mat::Zero(6, 3);
  double value = 0;
  for (int g = 0; g < 3; ++g) {
    std::vector<int64_t> rows;
    for (int i = 0; i < 6; ++i) {
      if (group[i] == g) rows.push_back(i);
    }
    Mat ag(static_cast<Eigen::Index>(rows.size()), 3);
    for (std::size_t r = 0; r < rows.size(); ++r) ag.row(r) = a.row(rows[r]);
    const LossGrad part = InfoNce(ag, k, rows, 0.7, 1.0);
    value += part.value;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      expect_da.row(rows[r]) = part.d_first.row(r);
      expect_dk.row(rows[r]) = part.d_second.row(rows[r]);
    }
  }
  EXPECT_NEAR(masked.value, value, 1e-13);
  EXPECT_LT(RelErr(masked.d_first, expect_da), 1e-13);
  EXPECT_LT(RelErr(masked.d_second, expect_dk), 1e-13);
  // And no key gradient at all when every term is masked.
  const LossGrad none = InfoNce(a, k, Iota(6), 0.7, 1.0, [](int64_t, int64_t) { return false; });
  EXPECT_EQ(none.d_second.cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LT(RelErr(none.d_first, masked.d_first), 1e-15);
}

TEST(Task, BatchesAreDeterministicBalancedAndSliceable) {
  const TaskOptions o;
  const Batch b1 = MakeBatch(5, 7, 11, o), b2 = MakeBatch(5, 7, 11, o);
  EXPECT_EQ(b1.x, b2.x);
  EXPECT_EQ(b1.b, b2.b);
  int positives = 0;
  for (int y : b1.labels) positives += y;
  EXPECT_EQ(positives, 5);
  EXPECT_NE(MakeBatch(5, 8, 11, o).x, b1.x);
  const Batch s = Slice(b1, 3, 4);
  EXPECT_EQ(s.a, b1.a.middleRows(3, 4));
  EXPECT_THROW(Slice(b1, 9, 4), std::out_of_range);
}

}  // namespace
}  // namespace ddp::autograd_lost_gather
