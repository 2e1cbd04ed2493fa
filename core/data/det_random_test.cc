#include "core/data/det_random.h"

#include <cmath>

#include "gtest/gtest.h"

namespace ddp::data {
namespace {

TEST(PortableLog, WithinFourUlpOfLibm) {
  DetRng rng(1);
  for (int i = 0; i < 200000; ++i) {
    // Values across many binades, including (0, 1) where the polar method uses it.
    const double x = std::ldexp(0.5 + rng.Uniform(), static_cast<int>(rng.Below(200)) - 100);
    const double want = std::log(x);
    ASSERT_NEAR(PortableLog(x), want, 4 * std::abs(std::nextafter(want, 0.0) - want) + 1e-300)
        << "x=" << x;
  }
  EXPECT_EQ(PortableLog(1.0), 0.0);
  EXPECT_TRUE(std::isinf(PortableLog(0.0)));
  EXPECT_TRUE(std::isnan(PortableLog(-1.0)));
}

TEST(DetRng, NormalMomentsAndFixedValues) {
  DetRng rng(42);
  const int n = 400000;
  double sum = 0, sum2 = 0, sum4 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.Normal();
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
  }
  // 5 standard errors: mean (se 1/sqrt n), variance (se sqrt(2/n)), kurtosis 3 (se sqrt(96/n)).
  EXPECT_NEAR(sum / n, 0.0, 5 * std::sqrt(1.0 / n));
  EXPECT_NEAR(sum2 / n, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(sum4 / n, 3.0, 5 * std::sqrt(96.0 / n));
}

TEST(DetRng, SameSeedSameStream) {
  DetRng a(StreamSeed(5, 17)), b(StreamSeed(5, 17)), c(StreamSeed(5, 18));
  for (int i = 0; i < 100; ++i) {
    const double x = a.Normal();
    EXPECT_EQ(x, b.Normal());
    EXPECT_NE(x, c.Normal());
  }
}

TEST(DetRng, BelowIsUniform) {
  DetRng rng(3);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) ++counts[rng.Below(3)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

}  // namespace
}  // namespace ddp::data
