// Eigen's headers are found and a solve gives the right answer.
#include <Eigen/Dense>

#include "gtest/gtest.h"

namespace {

TEST(EigenSmoke, SolvesALinearSystem) {
  Eigen::Matrix3d a;
  a << 4, 1, 0, 1, 3, 1, 0, 1, 2;
  const Eigen::Vector3d x_true(1.0, -2.0, 3.0);
  const Eigen::Vector3d b = a * x_true;
  const Eigen::Vector3d x = a.ldlt().solve(b);
  EXPECT_LT((x - x_true).norm(), 1e-12);
}

}  // namespace
