// IndexDivider against the plain division: every dividend below 2^16 for
// every divisor below 300, the dividends next to multiples of the divisor and
// next to 2^31 for divisors up to 2^31 - 1 (powers of two, their neighbours,
// random ones), and the fallback past 2^31.
#include "core/cuda/index_divider.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ddp::cuda {
namespace {

constexpr int64_t kTwo31 = int64_t{1} << 31;

// Mismatches of Div and Mod against / and % for these dividends; the first
// few are printed.
int CheckMany(int64_t d, int64_t max_dividend, const std::vector<int64_t>& ns) {
  const IndexDivider div = IndexDivider::For(d, max_dividend);
  int bad = 0;
  for (int64_t n : ns) {
    if (n < 0 || n > max_dividend) continue;
    if (div.Div(n) != n / d || div.Mod(n) != n % d) {
      if (++bad <= 3) ADD_FAILURE() << n << " / " << d << ": " << div.Div(n) << " rem " << div.Mod(n);
    }
  }
  return bad;
}

TEST(IndexDivider, EveryDividendBelow65536ForEveryDivisorBelow300) {
  std::vector<int64_t> ns(65536);
  for (int64_t n = 0; n < 65536; ++n) ns[n] = n;
  for (int64_t d = 1; d < 300; ++d) {
    EXPECT_TRUE(IndexDivider::For(d, 65535).fast);
    EXPECT_EQ(CheckMany(d, 65535, ns), 0) << "d = " << d;
  }
}

TEST(IndexDivider, AroundMultiplesAndTheTopForLargeDivisors) {
  std::vector<int64_t> ds;
  for (int s = 0; s <= 30; ++s) {
    for (int64_t delta : {-1, 0, 1}) ds.push_back((int64_t{1} << s) + delta);
  }
  for (int64_t d : {3136, 12544, 100352, 1003, 7, 25690112}) ds.push_back(d);  // plane sizes, n * plane
  std::mt19937_64 rng(42);
  for (int i = 0; i < 300; ++i) ds.push_back(1 + static_cast<int64_t>(rng() % (kTwo31 - 1)));
  ds.push_back(kTwo31 - 1);
  for (int64_t d : ds) {
    if (d < 1 || d >= kTwo31) continue;
    std::vector<int64_t> ns = {0, 1, kTwo31 - 1, kTwo31 - 2, kTwo31 - 1 - d};
    for (int64_t m = 1; m <= 64 && m * d < kTwo31; ++m) {
      for (int64_t delta : {-1, 0, 1}) ns.push_back(m * d + delta);
    }
    const int64_t q_top = (kTwo31 - 1) / d;
    for (int64_t delta : {-1, 0, 1}) ns.push_back(q_top * d + delta);
    for (int i = 0; i < 200; ++i) ns.push_back(static_cast<int64_t>(rng() % kTwo31));
    EXPECT_TRUE(IndexDivider::For(d, kTwo31 - 1).fast) << d;
    EXPECT_EQ(CheckMany(d, kTwo31 - 1, ns), 0) << "d = " << d;
  }
}

TEST(IndexDivider, FallsBackTo64BitDivisionPast2To31) {
  const IndexDivider big_n = IndexDivider::For(3136, kTwo31);
  EXPECT_FALSE(big_n.fast);
  EXPECT_EQ(big_n.Div(int64_t{5} << 33), (int64_t{5} << 33) / 3136);
  const IndexDivider big_d = IndexDivider::For(kTwo31 + 7, int64_t{1} << 40);
  EXPECT_FALSE(big_d.fast);
  EXPECT_EQ(big_d.Div((int64_t{1} << 40) - 1), ((int64_t{1} << 40) - 1) / (kTwo31 + 7));
  EXPECT_EQ(big_d.Mod((int64_t{1} << 40) - 1), ((int64_t{1} << 40) - 1) % (kTwo31 + 7));
  EXPECT_FALSE(IndexDivider::For(0, 10).fast);  // a zero plane: never used
}

}  // namespace
}  // namespace ddp::cuda
