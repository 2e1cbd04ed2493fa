// GoogleTest and GoogleMock link and run.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

TEST(GtestSmoke, MatchersWork) {
  std::vector<int> v = {3, 1, 2};
  EXPECT_THAT(v, ::testing::UnorderedElementsAre(1, 2, 3));
}

}  // namespace
