#include "bench/padding/run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "bench/common/report.h"
#include "bench/common/sched.h"
#include "bench/padding/gather.h"
#include "bench/padding/memory.h"
#include "benchmark/benchmark.h"
#include "core/comm/make_comm.h"
#include "core/results/provenance.h"
#ifdef DDP_HAVE_NCCL
#include "bench/padding/nccl_gather.h"
#endif

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

class Runner {
 public:
  Runner(const launch::RankEnv& env, const RunConfig& config, const std::vector<Case>& cases)
      : config_(config),
        cases_(cases),
        times_(cases.size(), std::vector<double>(static_cast<std::size_t>(config.reps), -1)),
        shared_gpu_(config.backend == "nccl" && env.share_gpu) {
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      if (IsFloor(cases_[i].method)) floors_[cases_[i].group].push_back(i);
    }
    comm::CommOptions o = comm::OptionsFromRankEnv(env);
    o.backend = config.backend;
    o.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(config.timeout_s * 1000));
    o.share_gpu = env.share_gpu;
    comm_ = comm::MakeComm(o);
    if (config.backend == "nccl") {
#ifdef DDP_HAVE_NCCL
      const int device = SelectGpu(env);
      memory_ = DeviceMemory(device);
      nccl_ = ConnectRawNccl(env, device, static_cast<std::int64_t>(config.timeout_s * 1000));
#else
      throw std::runtime_error("--backend nccl: this binary was built without CUDA");
#endif
    } else {
      memory_ = HostMemory();
    }
  }

  std::unique_ptr<Gather> Make(const Case& c) {
    if (c.method == Method::kGroupedBroadcast || c.method == Method::kGroupedSendRecv) {
#ifdef DDP_HAVE_NCCL
      return MakeNcclGather(c.method, nccl_, *memory_, c.lengths);
#else
      throw std::runtime_error(std::string(Name(c.method)) + " needs NCCL");
#endif
    }
    return MakeCommGather(c.method, *comm_, *memory_, c.lengths);
  }

  // One iteration: the slowest rank's time and the slowest rank's pad and
  // trim time (Memory spans: CUDA events on a GPU; 0 for the methods that
  // neither pad nor trim), the same on every rank.
  struct Timed {
    double wall_s, pad_trim_s;
  };
  Timed TimedRun(Gather& g) {
    comm_->Barrier();
    const auto t0 = Clock::now();
    g.Run();
    double v[2] = {std::chrono::duration<double>(Clock::now() - t0).count(), memory_->TakeSpanSeconds()};
    comm_->Allreduce(std::span<double>(v, 2), comm::ReduceOp::kMax);
    return {v[0], v[1]};
  }

  // Every rank checks its output; any mismatch anywhere fails every rank.
  void Verify(const Case& c, Gather& g) {
    const std::vector<double> got = g.Output();
    const std::vector<double> want = Expected(c.method, c.lengths);
    std::int64_t bad = got.size() == want.size() ? 0 : static_cast<std::int64_t>(want.size());
    for (std::size_t i = 0; bad == 0 && i < got.size(); ++i) bad += got[i] != want[i];
    comm_->Allreduce(std::span<std::int64_t>(&bad, 1), comm::ReduceOp::kSum);
    if (bad != 0) {
      throw std::runtime_error(c.name + ": gathered output differs from the expected values (" +
                               std::to_string(bad) + " element(s) over all ranks)");
    }
  }

  // Checks the case, then decides its iteration count (rank 0's, broadcast).
  std::int64_t Probe(const Case& c) {
    std::unique_ptr<Gather> g = Make(c);
    g->Run();
    Verify(c, *g);
    const double t = (TimedRun(*g).wall_s + TimedRun(*g).wall_s) / 2;
    std::int64_t n = static_cast<std::int64_t>(std::ceil(config_.min_time_s / std::max(t, 1e-9)));
    n = std::clamp(n, config_.min_iters, config_.max_iters);
    comm_->Broadcast(std::span<std::int64_t>(&n, 1), 0);
    return n;
  }

  // The floor of (group, rep): the fastest floor method of that repetition
  // run so far (the floors run first in every repetition of a group).
  double FloorOf(int group, int rep) const {
    double best = -1;
    for (std::size_t i : floors_.at(group)) {
      const double t = times_[i][static_cast<std::size_t>(rep)];
      if (t > 0 && (best < 0 || t < best)) best = t;
    }
    return best;
  }

  void RunCase(benchmark::State& state, std::size_t index, int rep) {
    const Case& c = cases_[index];
    std::unique_ptr<Gather> g = Make(c);
    g->Run();  // first touch of fresh buffers stays out of the timing
    memory_->TakeSpanSeconds();
    std::vector<double> dts, pad_trims;
    dts.reserve(static_cast<std::size_t>(state.max_iterations));
    for (auto _ : state) {
      const Timed t = TimedRun(*g);
      state.SetIterationTime(t.wall_s);
      dts.push_back(t.wall_s);
      pad_trims.push_back(t.pad_trim_s);
    }
    // The repetition's typical iteration: the median is what the ratios use,
    // because one descheduled iteration in a few hundred moves the mean by
    // several percent on a shared machine and says nothing about the method.
    const double median = Median(dts);
    times_[index][static_cast<std::size_t>(rep)] = median;
    const GatherCost cost = Cost(c.method, c.lengths);
    const double w = static_cast<double>(c.lengths.size());
    const double max = static_cast<double>(*std::max_element(c.lengths.begin(), c.lengths.end()));
    state.counters["W"] = w;
    state.counters["rep"] = rep;
    state.counters["bytes_per_rank"] = cost.useful_bytes / w;
    state.counters["max_bytes"] = max * kElementBytes;
    state.counters["wire_bytes_per_rank"] = cost.wire_bytes_per_rank;
    state.counters["wasted_bytes"] = cost.wasted_bytes;
    state.counters["eff_bandwidth"] = cost.useful_bytes / median;  // bytes/s of data gathered
    state.counters["median_us"] = median * 1e6;
    // The pad and trim alone (inside median_us), by the memory's own clock:
    // CUDA events around core/cuda's varlen kernels on a GPU.
    if (c.method == Method::kPadGatherTrim || c.method == Method::kBoundedPad) {
      state.counters["pad_trim_us"] = Median(pad_trims) * 1e6;
    }
    // The machine's load as this entry ended: a number to judge it by.
    if (const std::vector<double> load = LoadAverages(); !load.empty()) {
      state.counters["load1"] = load[0];
    }
    // A floor entry gets its ratio once every floor of the repetition ran.
    const std::vector<std::size_t>& floors = floors_.at(c.group);
    const bool floors_done = !IsFloor(c.method) || index == floors.back();
    const double floor = FloorOf(c.group, rep);
    if (floors_done && floor > 0) {
      state.counters["floor_us"] = floor * 1e6;
      state.counters["ratio_over_floor"] = median / floor;
    }
  }

  // Per case: median and min/max over repetitions of the time and of the
  // ratio over that repetition's floor; per group, which floor won.
  void PrintSummary(std::FILE* out) const {
    if (shared_gpu_) {
      std::fprintf(out,
                   "\nSHARED GPU: these ranks share a GPU (NCCL over sockets between them, "
                   "contexts time-sliced); the rows below are functional, not performance "
                   "numbers (ddp_shared_gpu in the JSON)\n");
    }
    std::fprintf(out,
                 "\nmedian over %d interleaved repetitions [min, max] of each repetition's median "
                 "iteration; ratio = time / the same repetition's floor (the faster floor "
                 "method)\n",
                 config_.reps);
    std::fprintf(out, "%-52s %10s %21s %11s %11s %9s %20s\n", "case", "time_us", "[min, max]",
                 "wire_KiB/rk", "wasted_KiB", "eff_MB/s", "x_floor [min, max]");
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      std::vector<double> t, ratio;
      int wins = 0;
      for (int rep = 0; rep < config_.reps; ++rep) {
        const double v = times_[i][static_cast<std::size_t>(rep)];
        if (v <= 0) continue;
        t.push_back(v);
        const double floor = FloorOf(c.group, rep);
        ratio.push_back(v / floor);
        wins += IsFloor(c.method) && v == floor;
      }
      if (t.empty()) continue;
      const GatherCost cost = Cost(c.method, c.lengths);
      const double med = Median(t);
      std::fprintf(out, "%-52s %10.1f [%8.1f, %9.1f] %11.1f %11.1f %9.1f   %5.3f [%5.3f, %5.3f]",
                   c.name.c_str(), med * 1e6, *std::min_element(t.begin(), t.end()) * 1e6,
                   *std::max_element(t.begin(), t.end()) * 1e6, cost.wire_bytes_per_rank / 1024,
                   cost.wasted_bytes / 1024, cost.useful_bytes / med / 1e6, Median(ratio),
                   *std::min_element(ratio.begin(), ratio.end()),
                   *std::max_element(ratio.begin(), ratio.end()));
      if (IsFloor(c.method)) std::fprintf(out, "  (floor in %d/%zu)", wins, t.size());
      std::fprintf(out, "\n");
    }
    std::fflush(out);
  }

  // Nobody tears down while a peer still gathers.
  void Finish() {
    comm_->Barrier();
    comm_->Finish();
  }

 private:
  const RunConfig& config_;
  const std::vector<Case>& cases_;
  std::unique_ptr<comm::Comm> comm_;
  std::unique_ptr<Memory> memory_;
#ifdef DDP_HAVE_NCCL
  std::shared_ptr<RawNccl> nccl_;
#endif
  std::map<int, std::vector<std::size_t>> floors_;  // group -> its floor cases
  std::vector<std::vector<double>> times_;          // [case][rep] mean seconds; -1: not run
  bool shared_gpu_;  // NCCL ranks on one GPU: functional rows only
};

}  // namespace

int RunRank(const launch::RankEnv& env, const RunConfig& config, const std::vector<Case>& cases) {
  if (env.rank == 0 && config.console_fd >= 0) {
    std::fflush(stdout);
    ::dup2(config.console_fd, 1);
  }
  if (env.rank == 0 && config.console_err_fd >= 0) ::dup2(config.console_err_fd, 2);
  UseSchedPolicy(config.sched);  // before Gloo's threads exist: they inherit it
  if (config.pin_cpus) PinToCpu(env.rank);  // likewise inherited by Gloo's threads
  Runner runner(env, config, cases);
  std::vector<std::int64_t> iterations;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    iterations.push_back(runner.Probe(cases[i]));
    if (env.rank == 0) {
      std::fprintf(stderr, "padding: checked and probed %zu/%zu %s: %lld iterations\n", i + 1,
                   cases.size(), cases[i].name.c_str(), static_cast<long long>(iterations.back()));
    }
  }

  // Interleaved: within each group, repetition by repetition, every case.
  for (std::size_t first = 0; first < cases.size();) {
    std::size_t last = first;
    while (last < cases.size() && cases[last].group == cases[first].group) ++last;
    for (int rep = 0; rep < config.reps; ++rep) {
      for (std::size_t i = first; i < last; ++i) {
        const std::string name = cases[i].name + "/rep:" + std::to_string(rep);
        benchmark::RegisterBenchmark(
            name.c_str(), [&runner, i, rep](benchmark::State& s) { runner.RunCase(s, i, rep); })
            ->Iterations(iterations[i])
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
    first = last;
  }
  std::vector<std::string> args = {"padding"};
  const auto& extra = env.rank == 0 ? config.rank0_benchmark_args : config.other_benchmark_args;
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  benchmark::Initialize(&argc, argv.data());
  // Numbers to cite come from `bazel run -c opt`; the JSON says which build ran.
#ifdef __OPTIMIZE__
  benchmark::AddCustomContext("ddp_build", "optimized");
#else
  benchmark::AddCustomContext("ddp_build", "unoptimized (fastbuild): use bazel run -c opt");
#endif
  benchmark::AddCustomContext("ddp_backend", config.backend);
  benchmark::AddCustomContext("ddp_world_size", std::to_string(env.world_size));
  benchmark::AddCustomContext("ddp_reps", std::to_string(config.reps));
  benchmark::AddCustomContext("ddp_sched", config.sched);
  benchmark::AddCustomContext("ddp_pin_cpus", config.pin_cpus ? "yes" : "no");
  // Ranks sharing one GPU talk over sockets and time-slice its contexts:
  // such rows are kept out of performance claims (tables.py, the report).
  if (config.backend == "nccl") {
    benchmark::AddCustomContext("ddp_shared_gpu", env.share_gpu ? "yes" : "no");
  }
  benchmark::AddCustomContext(
      "ddp_timing", config.backend == "nccl"
                        ? "steady clock per gather, the slowest rank's; pad_trim_us: CUDA events around "
                          "core/cuda's PadRows/TrimRows on the device's stream"
                        : "steady clock per gather, the slowest rank's; pad_trim_us: steady clock around the "
                          "host copies");
  // The Gloo allgatherv's piece size (DDP_GLOO_ALLGATHERV_PIECE_KIB or the default).
  benchmark::AddCustomContext(
      "ddp_gloo_allgatherv_piece_kib",
      std::to_string(comm::ResolveGlooAllgathervPieceBytes(comm::CommOptions{}) / 1024));
  if (env.rank == 0) AddRunContext(env.world_size);
  if (env.rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
    if (config.console_summary) runner.PrintSummary(stdout);
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  runner.Finish();
  std::fflush(stdout);
  return 0;
}

}  // namespace ddp::bench
