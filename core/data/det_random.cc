#include "core/data/det_random.h"

#include <cmath>
#include <limits>

namespace ddp::data {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t StreamSeed(uint64_t seed, uint64_t index) {
  return SplitMix64(SplitMix64(seed) ^ index);
}

double PortableLog(double x) {
  if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int exponent = 0;
  double m = std::frexp(x, &exponent);  // exact: x = m * 2^exponent, m in [0.5, 1)
  constexpr double kSqrtHalf = 0.70710678118654752440;
  if (m < kSqrtHalf) {
    m *= 2.0;  // exact
    exponent -= 1;
  }
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: 13 odd terms reach
  // s^27/27 < 1e-21, below double precision.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double series = 1.0 / 27.0;
  for (int k = 25; k >= 1; k -= 2) series = 1.0 / k + s2 * series;
  const double log_m = 2.0 * s * series;
  // ln 2 split so that exponent * kLn2Hi is exact for |exponent| < 2^11.
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double e = static_cast<double>(exponent);
  return e * kLn2Hi + (log_m + e * kLn2Lo);
}

double DetRng::Uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

double DetRng::Normal() {
  while (true) {
    const double u = 2.0 * Uniform() - 1.0;
    const double v = 2.0 * Uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * PortableLog(s) / s);
  }
}

uint64_t DetRng::Below(uint64_t k) {
  // Reject the top partial block so that every residue is equally likely.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % k;
  while (true) {
    const uint64_t r = engine_();
    if (r < limit) return r % k;
  }
}

}  // namespace ddp::data
