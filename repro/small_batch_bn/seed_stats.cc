#include "repro/small_batch_bn/seed_stats.h"

#include <cmath>
#include <stdexcept>

namespace ddp::small_batch_bn {

double TQuantile975(int df) {
  if (df < 1) throw std::invalid_argument("TQuantile975: df must be >= 1");
  // t_{0.975, df} for df = 1..30 (standard tables, 4 decimals).
  static constexpr double kTable[30] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                        2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                        2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                        2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df <= 30) return kTable[df - 1];
  // Beyond 30: the normal quantile with the first Cornish-Fisher correction
  // (within 1e-3 of the exact value for df > 30).
  const double z = 1.959964;
  return z + (z * z * z + z) / (4.0 * df);
}

SeedStats Summarize(std::span<const double> values) {
  SeedStats s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  for (double v : values) s.mean += v / s.n;
  if (s.n == 1) return s;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(sq / (s.n - 1));
  s.ci95 = TQuantile975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
  return s;
}

}  // namespace ddp::small_batch_bn
