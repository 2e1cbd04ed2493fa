// bazel run //bench/padding -- [--world_size 4] [--backend gloo|nccl]
//     [--profiles all|equal,straggler,...] [--payloads 1K,64K,1M,16M]
//     [--benchmark_format=json] [--benchmark_out=PATH] [--benchmark_filter=REGEX]
//
// What the variable-length gather fixes cost: spawns W rank processes (no
// launcher needed), each verifies and times every case; rank 0 prints the
// Google Benchmark table (and JSON with --benchmark_out) and a compact
// summary. Exit 0 when every rank finished, 1 when one failed, 2 for bad usage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/benchmark_flags.h"
#include "bench/common/sched.h"
#include "bench/padding/cases.h"
#include "bench/padding/run.h"
#include "core/cli/config_error.h"
#include "core/cli/flags.h"
#include "core/launch/spawn.h"

namespace ddp::bench {
namespace {

constexpr char kProgram[] = "padding";

int Usage(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  return 2;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

int Main(int argc, char** argv) {
  // Split off Google Benchmark's flags (--benchmark_x=value) from ours and
  // check them (bench/benchmark_flags.h). The filter and the listing are
  // handled here; repetitions go to every rank (all must run the same
  // iterations); the rest only to rank 0, which reports.
  BenchmarkFlags bf;
  if (const std::string err = ParseBenchmarkFlags(argc, argv, CommonBenchmarkFlags(), &bf);
      !err.empty()) {
    return Usage(err);
  }
  std::vector<char*> ours = bf.ours;
  RunConfig run;
  const std::string filter = bf.filter;
  const bool list_tests = bf.list_tests;
  run.console_summary = bf.format == "console";
  for (const std::string& arg : bf.args) {
    if (arg.rfind("--benchmark_filter", 0) == 0 || arg.rfind("--benchmark_list_tests", 0) == 0) continue;
    run.rank0_benchmark_args.push_back(arg);
    if (arg.rfind("--benchmark_repetitions=", 0) == 0) run.other_benchmark_args.push_back(arg);
  }

  int world_size = 4;
  std::string profiles = "all";
  std::string payloads = "1K,64K,1M,16M";
  double deadline_s = 1800;
  bool share_gpu = false;
  cli::Flags flags(kProgram,
                   "What the variable-length gather fixes cost: (a) sizes exchange + pad + "
                   "all_gather + trim, (b) sizes exchange + allgatherv, (b') allgatherv with "
                   "known counts, (e) one all_gather of (length, share padded to a known bound), "
                   "(c) NCCL grouped broadcasts / send-recv, and on Gloo (b') through the direct-"
                   "exchange allgatherv too, against (d) the floor: the fastest equal-count "
                   "all_gather or allgatherv (Gloo: ring or direct) of the same total bytes.\n"
                   "Also takes --benchmark_format=, --benchmark_out=, --benchmark_filter=, "
                   "--benchmark_repetitions=, --benchmark_list_tests.");
  flags.Int("world_size", &world_size, "number of ranks (processes) to spawn", 1, 64);
  flags.Choice("backend", &run.backend, "collective engine", {"gloo", "nccl"});
  flags.String("profiles", &profiles,
               "skew profiles, comma-separated: all or equal, short_tail, uniform10, straggler, "
               "heavy_tailed");
  flags.String("payloads", &payloads,
               "nominal bytes per rank, comma-separated: K = KiB, M = MiB, or plain bytes; "
               "multiples of 8 in 8..64M");
  flags.Double("min_time", &run.min_time_s,
               "seconds of timed gathers per case and repetition (sets iterations)", 0, 60);
  flags.Int("reps", &run.reps,
            "interleaved repetitions of every case (the summary gives their median, min, max)",
            1, 100);
  flags.Int64("min_iters", &run.min_iters, "fewest iterations per case", 1, 1000000);
  flags.Int64("max_iters", &run.max_iters, "most iterations per case", 1, 1000000);
  flags.Choice("sched", &run.sched,
               "scheduling class of the rank processes (batch: no wakeup preemption, which "
               "keeps Gloo's loop thread from spinning against a preempted lock holder; see "
               "bench/common/sched.h)",
               SchedPolicies());
  flags.Bool("pin_cpus", &run.pin_cpus,
             "pin rank r (and its Gloo threads) to the (r mod n)-th allowed CPU: the same "
             "placement in every case, so the ratios measure the methods (bench/regen.sh sets "
             "it; off by default, as a rank runs in a job)");
  flags.Double("timeout", &run.timeout_s, "deadline of every collective, seconds", 1, 3600);
  flags.Double("deadline", &deadline_s, "deadline of the whole run, seconds", 1, 86400);
  flags.Bool("share_gpu", &share_gpu,
             "nccl: let ranks share GPUs (distinct NCCL_HOSTID; functional runs only, no "
             "performance numbers)");
  flags.ParseOrExit(static_cast<int>(ours.size()), ours.data());
  if (run.min_iters > run.max_iters) {
    return Usage("--min_iters " + std::to_string(run.min_iters) + " exceeds --max_iters " +
                 std::to_string(run.max_iters));
  }

  CaseOptions co;
  co.backend = run.backend;
  co.world_size = world_size;
  co.filter = filter;
  if (profiles == "all") {
    co.profiles = AllProfiles();
  } else {
    for (const std::string& p : Split(profiles)) {
      const auto parsed = ParseProfile(p);
      if (!parsed) {
        return Usage("bad value '" + p +
                     "' in --profiles (allowed: all, or a comma-separated list of equal, "
                     "short_tail, uniform10, straggler, heavy_tailed)");
      }
      co.profiles.push_back(*parsed);
    }
  }
  for (const std::string& p : Split(payloads)) {
    const auto parsed = ParsePayload(p);
    if (!parsed) {
      return Usage("bad value '" + p +
                   "' in --payloads (allowed: comma-separated sizes such as 1K, 64K, 1M, 16M, "
                   "64M or plain bytes; multiples of 8 from 8 bytes to 64M)");
    }
    co.payloads.push_back(*parsed);
  }
  if (co.profiles.empty() || co.payloads.empty()) {
    return Usage("--profiles and --payloads need at least one value each");
  }
  std::vector<Case> cases;
  try {
    cases = BuildCases(co);
  } catch (const std::invalid_argument& e) {
    return Usage(e.what());
  }
  if (list_tests) {
    for (const Case& c : cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }
  if (cases.empty()) return Usage("--benchmark_filter='" + filter + "' matches no case");

#ifndef __OPTIMIZE__
  std::fprintf(stderr, "%s: warning: built without optimization (Bazel's default fastbuild); "
               "numbers to cite come from `bazel run -c opt //bench/padding`\n", kProgram);
#endif
  std::fflush(stdout);
  std::cout.flush();
  std::fflush(stderr);
  run.console_fd = ::dup(1);
  run.console_err_fd = ::dup(2);
  launch::SpawnOptions so;
  so.deadline = std::chrono::milliseconds(static_cast<std::int64_t>(deadline_s * 1000));
  so.backend = run.backend;
  so.fail_fast = true;
  so.share_gpu = share_gpu;
  so.run_id = "bench_padding";
  const launch::RunResult result = launch::SpawnRanks(
      world_size, [&](const launch::RankEnv& env) { return RunRank(env, run, cases); }, so);
  if (result.all_ok()) return 0;
  std::fprintf(stderr, "%s: the run failed:\n%s", kProgram, result.Summary().c_str());
  for (const launch::RankOutcome& r : result.ranks) {
    if (!r.ok() && !r.stderr_text.empty()) {
      std::fprintf(stderr, "--- rank %d stderr ---\n%s", r.rank, r.stderr_text.c_str());
    }
  }
  return 1;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  try {
    return ddp::bench::Main(argc, argv);
  } catch (const ddp::launch::ConfigError& e) {
    std::fprintf(stderr, "padding: %s\n", e.what());
    return 2;
  }
}
