#include "core/exact/step_check.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace ddp::exact {
namespace {

TEST(NormwiseRelError, ScalesByTheLargestReferenceElement) {
  const std::vector<double> want = {1.0, -4.0, 0.0};
  const std::vector<double> got = {1.0, -4.0, 2e-12};
  EXPECT_DOUBLE_EQ(NormwiseRelError(got, want), 2e-12 / 4.0);
}

TEST(NormwiseRelError, EqualIsZeroAlsoForAllZeros) {
  const std::vector<double> z = {0.0, 0.0};
  EXPECT_EQ(NormwiseRelError(z, z), 0.0);
  EXPECT_EQ(NormwiseRelError(std::vector<double>{}, std::vector<double>{}), 0.0);
}

TEST(NormwiseRelError, MismatchNonFiniteAndZeroScaleAreInfinite) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(NormwiseRelError(std::vector<double>{1, 2}, std::vector<double>{1}), inf);
  EXPECT_EQ(NormwiseRelError(std::vector<double>{NAN}, std::vector<double>{1}), inf);
  EXPECT_EQ(NormwiseRelError(std::vector<double>{1}, std::vector<double>{0}), inf);
  EXPECT_EQ(NormwiseRelError(std::vector<float>{1.5f}, std::vector<float>{INFINITY}), inf);
}

TEST(StepCheck, ExactOnlyWhenEveryStepIsWithinTolerance) {
  StepCheck c(1e-12);
  EXPECT_FALSE(c.exact()) << "nothing compared is not exact";
  const std::vector<double> a = {1.0, 2.0};
  const std::vector<double> b = {1.0, 2.0 + 1e-15};
  c.Compare("grad", 0, b, a);
  c.Compare("param", 0, a, a);
  c.Compare("grad", 1, a, a);
  EXPECT_EQ(c.steps(), 2);
  EXPECT_TRUE(c.exact());
  const std::vector<double> off = {1.0, 2.0 + 1e-9};
  c.Compare("param", 2, off, a);
  EXPECT_FALSE(c.exact());
  EXPECT_EQ(c.steps(), 3);
  EXPECT_NEAR(c.worst(), 0.5e-9, 1e-15);
  EXPECT_NEAR(c.worst("param"), 0.5e-9, 1e-15);
  EXPECT_GT(c.worst("grad"), 0);
  EXPECT_LT(c.worst("grad"), 1e-15);
  EXPECT_EQ(c.worst("running_stats"), -1);
}

TEST(StepCheck, NanIsNeverExact) {
  StepCheck c;
  c.Add("loss", 0, NAN);
  EXPECT_FALSE(c.exact());
  EXPECT_TRUE(std::isinf(c.worst()));
}

TEST(StepCheck, FloatToleranceJudgesFloatSteps) {
  StepCheck c(kFloatTolerance);
  const std::vector<float> a = {1.0f, 3.0f};
  const std::vector<float> b = {1.0f, 3.0f + 3e-6f};
  c.Compare("grad", 0, b, a);
  EXPECT_TRUE(c.exact());
}

TEST(StepCheck, MergeKeepsTheWorstAndCountsSteps) {
  StepCheck a, b;
  a.Add("grad", 0, 1e-16);
  a.Add("grad", 1, 2e-16);
  b.Add("param", 0, 5e-13);
  b.Add("grad", 0, 1e-16);
  a.Merge(b);
  EXPECT_EQ(a.steps(), 3);
  EXPECT_DOUBLE_EQ(a.worst(), 5e-13);
  EXPECT_DOUBLE_EQ(a.worst("grad"), 2e-16);
  EXPECT_DOUBLE_EQ(a.worst("param"), 5e-13);
}

TEST(StepCheck, JsonRoundTrip) {
  StepCheck c(1e-12);
  c.Add("grad", 0, 1e-16);
  c.Add("running_stats", 3, 4e-14);
  const StepCheck back = StepCheck::FromJson(results::ParseJson(Dump(c.ToJson())));
  EXPECT_EQ(Dump(back.ToJson()), Dump(c.ToJson()));
  EXPECT_EQ(back.steps(), 2);
  EXPECT_DOUBLE_EQ(back.worst("running_stats"), 4e-14);
  EXPECT_THROW(StepCheck::FromJson(results::ParseJson("{\"tolerance\": 1}")),
               std::invalid_argument);
}

}  // namespace
}  // namespace ddp::exact
