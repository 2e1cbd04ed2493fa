// Mean and 95% confidence interval over seeds (Student's t), for the
// accuracy claims of this pair: a seed is one independent training run
// (initialisation, data order, training noise), so the runs of n seeds are
// n independent samples of the run-to-run distribution.
#pragma once

#include <span>

namespace ddp::small_batch_bn {

struct SeedStats {
  int n = 0;
  double mean = 0;
  double sd = 0;    // sample standard deviation (n - 1); 0 for n = 1
  double ci95 = 0;  // half-width t_{0.975, n-1} * sd / sqrt(n); 0 for n = 1
};

// Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1).
double TQuantile975(int df);

SeedStats Summarize(std::span<const double> values);

}  // namespace ddp::small_batch_bn
