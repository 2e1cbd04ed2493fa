// bench/recorder: what the flight recorder costs per collective, and what
// the whole Comm layer costs over a bare Gloo call.
//
//   bazel run --config=bench //bench:recorder -- [--limit_ns 100]
//     [--w2_repetitions 15] [--w2_calls 200] [--benchmark_out=PATH] [--benchmark_...]
//
// Google Benchmark runs the one-process cases (cases.h) with 10 repetitions
// in random interleaved order (unless --benchmark_repetitions or
// --benchmark_enable_random_interleaving say otherwise); the summary divides
// their medians, all from this run, in CPU time (the thread's own cost: a
// loaded machine inflates wall time by preemption; both are reported). Then two spawned ranks time the Comm
// layer against bare Gloo on a real two-rank collective (two_ranks.h). With
// --benchmark_out, the Google Benchmark JSON gets a "summary" object with
// these numbers. Exit 1 when the recorder's median exceeds --limit_ns, 2 for
// bad usage.
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/report.h"
#include "bench/recorder/cases.h"
#include "bench/recorder/two_ranks.h"
#include "core/cli/flags.h"
#include "core/comm/comm.h"
#include "core/launch/spawn.h"
#include "core/results/json.h"
#include "core/results/provenance.h"

namespace ddp::bench {
namespace {

constexpr char kProgram[] = "bench_recorder";

// Keeps every benchmark's median real and CPU time (ns per iteration) and
// prints as the console reporter does. Without repetitions (no aggregates),
// the single run's times stand in.
class Capture : public benchmark::ConsoleReporter {
 public:
  struct Times {
    double real_ns = 0, cpu_ns = 0;
    int64_t repetitions = 0;
  };
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const double to_ns = 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      Times& t = times_[r.run_name.str()];
      if (median || (r.run_type == Run::RT_Iteration && t.repetitions <= 1)) {
        t = {r.GetAdjustedRealTime() * to_ns, r.GetAdjustedCPUTime() * to_ns, r.repetitions};
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  Times Get(const std::string& name) const {
    auto it = times_.find(name);
    return it == times_.end() ? Times{} : it->second;
  }

 private:
  std::map<std::string, Times> times_;
};

// --benchmark_out relative to where `bazel run` was started, not runfiles.
std::string ResolvePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  return wd != nullptr && *wd != '\0' ? std::string(wd) + "/" + path : path;
}

// Adds "summary" to the Google Benchmark JSON at `path` (rewritten through a
// temporary file and a rename). Returns "" or the error.
std::string AddSummary(const std::string& path, const results::Json& summary) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path;
  std::stringstream text;
  text << in.rdbuf();
  results::Json j;
  try {
    j = results::ParseJson(text.str());
  } catch (const std::exception& e) {
    return path + ": " + e.what();
  }
  j["summary"] = summary;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << Dump(j, 2) << "\n";
    if (!out) return "cannot write " + tmp;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return ec ? "cannot rename " + tmp + ": " + ec.message() : "";
}

int Main(int argc, char** argv) {
  double limit_ns = 100;
  int w2_repetitions = 15, w2_calls = 200;
  cli::Flags flags(kProgram,
                   "The flight recorder's cost per collective (Enter + Exit of its ring buffer),\n"
                   "and the Comm layer's per-collective overhead over a bare Gloo call: on a\n"
                   "one-rank world (Google Benchmark, interleaved repetitions, medians) and on\n"
                   "two spawned ranks over TCP loopback. Also takes --benchmark_* flags.");
  flags.Double("limit_ns", &limit_ns, "exit 1 when the recorder's median per collective exceeds this",
               1, 1e6);
  flags.Int("w2_repetitions", &w2_repetitions, "repetitions of the two-rank comparison (0: skip it)",
            0, 1000);
  flags.Int("w2_calls", &w2_calls, "allreduces per variant and repetition, two ranks", 1, 100000);
  std::vector<std::string> gb = {argv[0]};
  std::vector<char*> ours = {argv[0]};
  std::string out_path;
  bool reps = false, interleave = false, min_time = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--benchmark_", 0) != 0) {
      ours.push_back(argv[i]);
      continue;
    }
    if (arg.rfind("--benchmark_out=", 0) == 0) {
      out_path = ResolvePath(arg.substr(16));
      arg = "--benchmark_out=" + out_path;
    }
    reps |= arg.rfind("--benchmark_repetitions", 0) == 0;
    interleave |= arg.rfind("--benchmark_enable_random_interleaving", 0) == 0;
    min_time |= arg.rfind("--benchmark_min_time", 0) == 0;
    gb.push_back(arg);
  }
  switch (flags.Parse(static_cast<int>(ours.size()), ours.data())) {
    case cli::Flags::Result::kOk: break;
    case cli::Flags::Result::kHelp: return 0;
    case cli::Flags::Result::kError: return 2;
  }
  if (!reps) gb.push_back("--benchmark_repetitions=10");
  if (!interleave) gb.push_back("--benchmark_enable_random_interleaving=true");
  if (!min_time) gb.push_back("--benchmark_min_time=0.1");
  gb.push_back("--benchmark_display_aggregates_only=true");
  std::vector<char*> gb_argv;
  for (auto& a : gb) gb_argv.push_back(a.data());
  int gb_argc = static_cast<int>(gb_argv.size());
  gb_argv.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_argv.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_argv.data())) return 2;

  const results::Provenance p = results::CollectProvenance();
  AddRunContext(2);  // provenance, CPUs, load: as every benchmark's JSON (the largest world is 2)
  const std::string rdzv = launch::MakeFreshDir("bench-recorder");
  OneRankWorlds worlds = RegisterCases(rdzv);
  Capture capture;
  benchmark::RunSpecifiedBenchmarks(&capture);
  benchmark::ClearRegisteredBenchmarks();  // they hold the worlds too
  worlds = {};
  std::error_code ec;
  std::filesystem::remove_all(rdzv, ec);

  const auto rec = capture.Get(kRecorderAllreduce), rec_v = capture.Get(kRecorderAllgatherv),
             no_clock = capture.Get(kRecorderNoClock), clocks = capture.Get(kTwoClockReads),
             bare = capture.Get(kBareGloo), on = capture.Get(kCommOn), off = capture.Get(kCommOff);
  // The limit is on CPU time: the thread's own cost, which a loaded machine
  // does not inflate the way it inflates wall time (preemption).
  const bool ok = rec.cpu_ns > 0 && rec.cpu_ns <= limit_ns;
  double load[1] = {0};
  const bool have_load = ::getloadavg(load, 1) == 1;
  std::printf("\nsummary (medians of %lld repetitions per benchmark, interleaved, this run; CPU time, "
              "wall time in parentheses; load average %.2f on %u CPUs):\n",
              static_cast<long long>(rec.repetitions), load[0], std::thread::hardware_concurrency());
  std::printf("flight recorder, per collective recorded (Enter + Exit, both clock reads included):\n");
  std::printf("  allreduce          %8.1f ns (%.1f)   limit %g ns: %s\n", rec.cpu_ns, rec.real_ns, limit_ns,
              ok ? "ok" : "EXCEEDED");
  std::printf("  allgatherv W=64    %8.1f ns (%.1f)\n", rec_v.cpu_ns, rec_v.real_ns);
  std::printf("  without the clock reads %.1f ns (%.1f); the two steady_clock reads alone %.1f ns (%.1f)\n",
              no_clock.cpu_ns, no_clock.real_ns, clocks.cpu_ns, clocks.real_ns);
  results::Json s;
  s["repetitions"] = static_cast<long long>(rec.repetitions);
  auto put = [&s](const std::string& key, const Capture::Times& t) {
    s[key + "_ns"] = t.real_ns;
    s[key + "_cpu_ns"] = t.cpu_ns;
  };
  put("recorder", rec);
  put("recorder_allgatherv_w64", rec_v);
  put("recorder_no_clock", no_clock);
  put("two_clock_reads", clocks);
  s["limit_ns"] = limit_ns;
  s["limit_on"] = "cpu time";
  s["within_limit"] = ok;
  if (have_load) s["load_average_1m"] = load[0];
  s["cpus"] = static_cast<long long>(std::thread::hardware_concurrency());
  if (bare.real_ns > 0 && on.real_ns > 0 && off.real_ns > 0) {
    std::printf("Comm layer over a bare Gloo call, one-rank world (no peer: the software alone):\n");
    std::printf("  bare gloo::allreduce %.1f ns (%.1f); Comm::Allreduce %.1f ns (%.1f) with the recorder, "
                "%.1f ns (%.1f) without\n",
                bare.cpu_ns, bare.real_ns, on.cpu_ns, on.real_ns, off.cpu_ns, off.real_ns);
    std::printf("  overhead %+.1f ns per collective (x%.2f), of which the recorder %+.1f ns\n",
                on.cpu_ns - bare.cpu_ns, on.cpu_ns / bare.cpu_ns, on.cpu_ns - off.cpu_ns);
    put("w1_bare_gloo", bare);
    put("w1_comm_recorder_on", on);
    put("w1_comm_recorder_off", off);
    s["w1_overhead_cpu_ns"] = on.cpu_ns - bare.cpu_ns;
    s["w1_ratio_cpu"] = on.cpu_ns / bare.cpu_ns;
    s["w1_recorder_share_cpu_ns"] = on.cpu_ns - off.cpu_ns;
  }
  if (w2_repetitions > 0) {
    std::fprintf(stderr, "two ranks: %d repetitions x 3 variants x %d allreduces...\n", w2_repetitions,
                 w2_calls);
    const TwoRankTimes t = MeasureTwoRanks(w2_repetitions, w2_calls);
    if (!t.error.empty()) {
      std::fprintf(stderr, "%s: the two-rank run failed:\n%s\n", kProgram, t.error.c_str());
      return 1;
    }
    const double b = Median(t.bare_us), c_on = Median(t.on_us), c_off = Median(t.off_us);
    const double bc = Median(t.bare_cpu_us), con = Median(t.on_cpu_us), coff = Median(t.off_cpu_us);
    std::printf("two ranks, TCP loopback (%d interleaved repetitions of %d calls; rank 0's median per call, "
                "its thread's CPU time, wall time in parentheses):\n",
                w2_repetitions, w2_calls);
    std::printf("  bare %.2f us (%.2f); Comm %.2f us (%.2f) with the recorder, x%.3f; %.2f us (%.2f) without, "
                "x%.3f\n",
                bc, b, con, c_on, con / bc, coff, c_off, coff / bc);
    s["w2_repetitions"] = w2_repetitions;
    s["w2_calls"] = w2_calls;
    s["w2_bare_gloo_us"] = b;
    s["w2_comm_recorder_on_us"] = c_on;
    s["w2_comm_recorder_off_us"] = c_off;
    s["w2_bare_gloo_cpu_us"] = bc;
    s["w2_comm_recorder_on_cpu_us"] = con;
    s["w2_comm_recorder_off_cpu_us"] = coff;
    s["w2_ratio_on_cpu"] = con / bc;
    s["w2_ratio_off_cpu"] = coff / bc;
    s["w2_ratio_on_wall"] = c_on / b;
  }
  s["provenance"] = results::ToJson(p);
  if (!out_path.empty()) {
    if (const std::string err = AddSummary(out_path, s); !err.empty()) {
      std::fprintf(stderr, "%s: --benchmark_out: %s\n", kProgram, err.c_str());
      return 1;
    }
    std::printf("results: %s\n", out_path.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) { return ddp::bench::Main(argc, argv); }
