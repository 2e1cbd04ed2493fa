// What every benchmark binary records and reports the same way: rank 0's
// JSON context (where and how the numbers were measured), the machine's
// load, a repetition's median, and a silent reporter for ranks > 0.
#pragma once

#include <vector>

#include "benchmark/benchmark.h"

namespace ddp::bench {

// Ranks > 0 run the same benchmarks silently.
class NullReporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// /proc/loadavg's 1-, 5- and 15-minute load averages (empty where unreadable).
std::vector<double> LoadAverages();

// The median of v (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> v);

// Adds to the JSON context what every result record carries (ddp_commit,
// ddp_cpu, ddp_gloo, ddp_tcp_congestion), the CPUs and whether `world_size`
// ranks oversubscribe them (ddp_cpus, ddp_oversubscribed: rows with more
// ranks than cores measure the scheduler as much as the engine), and the
// load average now (ddp_loadavg_start). Call on rank 0, after
// benchmark::Initialize and before the benchmarks run.
void AddRunContext(int world_size);

}  // namespace ddp::bench
