// One rank of `bazel run //bench/padding`: verify every case, fix its
// iteration count, then run the cases under Google Benchmark, interleaved.
//
// Every rank runs the same cases with the same iteration counts (rank 0
// probes each case and broadcasts the count), or the benchmark itself would
// hang on a collective one rank never enters. Each iteration is
//   barrier; t0; gather; t1; all_reduce(max of t1 - t0)
// and the slowest rank's time is the iteration time (manual time), so every
// rank records the same numbers; only rank 0 reports.
//
// Repetitions are interleaved within each (profile, payload) group: rep 0
// runs the group's floors then every method, then rep 1 does the same, and
// so on (A B A B, not A A B B), so a burst of machine load hits every method
// of a repetition alike. Each repetition's ratio over the floor uses that
// repetition's floor (the fastest of the floor methods: floor_allgather,
// floor_allgatherv and, on Gloo, floor_allgatherv_direct);
// the summary reports the median and the min/max over repetitions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/padding/cases.h"
#include "core/launch/rank_env.h"

namespace ddp::bench {

struct RunConfig {
  std::string backend = "gloo";
  double timeout_s = 120;       // deadline of every collective
  double min_time_s = 0.1;      // per case and repetition: iterations = ceil(min_time / probe)
  std::int64_t min_iters = 3;
  std::int64_t max_iters = 1000;
  int reps = 5;                 // interleaved repetitions of every case
  std::string sched = "batch";  // scheduling class of the ranks (bench/common/sched.h)
  bool pin_cpus = false;        // rank r on one CPU (PinToCpu, bench/common/sched.h)
  // Google Benchmark's flags: rank 0 gets all, the others only those that
  // change what runs (--benchmark_repetitions), so every rank runs alike.
  std::vector<std::string> rank0_benchmark_args;
  std::vector<std::string> other_benchmark_args;
  bool console_summary = true;  // print the compact table after the run
  int console_fd = -1;          // rank 0 writes its stdout here (the terminal)
  int console_err_fd = -1;      // and its stderr (progress lines) here
};

// The body of one rank; returns its exit code. Throws on failure (a wrong
// gather output, a collective past its deadline).
int RunRank(const launch::RankEnv& env, const RunConfig& config, const std::vector<Case>& cases);

}  // namespace ddp::bench
