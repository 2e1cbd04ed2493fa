// Google Benchmark links and runs one benchmark.
#include <numeric>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

void BM_Accumulate(benchmark::State& state) {
  std::vector<double> v(1024, 1.0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0));
  }
}
BENCHMARK(BM_Accumulate)->Iterations(100);

}  // namespace
