#include "bench/padding/run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "bench/padding/gather.h"
#include "bench/padding/memory.h"
#include "benchmark/benchmark.h"
#include "core/comm/make_comm.h"
#ifdef DDP_HAVE_NCCL
#include "bench/padding/nccl_gather.h"
#endif

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Ranks > 0 run the same benchmarks silently.
class NullReporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

struct Row {
  std::string name;
  std::int64_t iterations = 0;
  double mean_s = 0;
  GatherCost cost;
  double ratio = 0;
};

class Runner {
 public:
  Runner(const launch::RankEnv& env, const RunConfig& config) : config_(config) {
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

  // One iteration: the slowest rank's time, the same on every rank.
  double TimedRun(Gather& g) {
    comm_->Barrier();
    const auto t0 = Clock::now();
    g.Run();
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    comm_->Allreduce(std::span<double>(&dt, 1), comm::ReduceOp::kMax);
    return dt;
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
    const double t = (TimedRun(*g) + TimedRun(*g)) / 2;
    std::int64_t n = static_cast<std::int64_t>(std::ceil(config_.min_time_s / std::max(t, 1e-9)));
    n = std::clamp(n, config_.min_iters, config_.max_iters);
    comm_->Broadcast(std::span<std::int64_t>(&n, 1), 0);
    return n;
  }

  void RunCase(benchmark::State& state, const Case& c) {
    std::unique_ptr<Gather> g = Make(c);
    g->Run();  // first touch of fresh buffers stays out of the timing
    double total = 0;
    for (auto _ : state) {
      const double dt = TimedRun(*g);
      state.SetIterationTime(dt);
      total += dt;
    }
    const double mean = total / static_cast<double>(state.iterations());
    if (c.method == Method::kFloor) {
      floor_sum_[c.group] += mean;
      floor_count_[c.group] += 1;
    }
    const GatherCost cost = Cost(c.method, c.lengths);
    const double w = static_cast<double>(c.lengths.size());
    const double max = static_cast<double>(*std::max_element(c.lengths.begin(), c.lengths.end()));
    state.counters["W"] = w;
    state.counters["bytes_per_rank"] = cost.useful_bytes / w;
    state.counters["max_bytes"] = max * kElementBytes;
    state.counters["wire_bytes_per_rank"] = cost.wire_bytes_per_rank;
    state.counters["wasted_bytes"] = cost.wasted_bytes;
    state.counters["eff_bandwidth"] = cost.useful_bytes / mean;  // bytes/s of data gathered
    Row row{c.name, static_cast<std::int64_t>(state.iterations()), mean, cost, 0};
    if (floor_count_[c.group] > 0) {
      row.ratio = mean / (floor_sum_[c.group] / floor_count_[c.group]);
      state.counters["ratio_over_floor"] = row.ratio;
    }
    rows_.push_back(row);
  }

  void PrintSummary(std::FILE* out) const {
    std::fprintf(out, "\n%-52s %6s %12s %12s %12s %10s %8s\n", "case", "iters", "time_us",
                 "wire_KiB/rk", "wasted_KiB", "eff_MB/s", "x_floor");
    for (const Row& r : rows_) {
      std::fprintf(out, "%-52s %6lld %12.1f %12.1f %12.1f %10.1f %8.3f\n", r.name.c_str(),
                   static_cast<long long>(r.iterations), r.mean_s * 1e6,
                   r.cost.wire_bytes_per_rank / 1024, r.cost.wasted_bytes / 1024,
                   r.cost.useful_bytes / r.mean_s / 1e6, r.ratio);
    }
    std::fflush(out);
  }

  comm::Comm& comm() { return *comm_; }

 private:
  const RunConfig& config_;
  std::unique_ptr<comm::Comm> comm_;
  std::unique_ptr<Memory> memory_;
#ifdef DDP_HAVE_NCCL
  std::shared_ptr<RawNccl> nccl_;
#endif
  std::map<int, double> floor_sum_;
  std::map<int, int> floor_count_;
  std::vector<Row> rows_;
};

}  // namespace

int RunRank(const launch::RankEnv& env, const RunConfig& config, const std::vector<Case>& cases) {
  if (env.rank == 0 && config.console_fd >= 0) {
    std::fflush(stdout);
    ::dup2(config.console_fd, 1);
  }
  if (env.rank == 0 && config.console_err_fd >= 0) ::dup2(config.console_err_fd, 2);
  Runner runner(env, config);
  std::vector<std::int64_t> iterations;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    iterations.push_back(runner.Probe(cases[i]));
    if (env.rank == 0) {
      std::fprintf(stderr, "padding: checked and probed %zu/%zu %s: %lld iterations\n", i + 1,
                   cases.size(), cases[i].name.c_str(), static_cast<long long>(iterations.back()));
    }
  }

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    benchmark::RegisterBenchmark(c.name.c_str(),
                                 [&runner, &c](benchmark::State& s) { runner.RunCase(s, c); })
        ->Iterations(iterations[i])
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
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
  if (env.rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
    if (config.console_summary) runner.PrintSummary(stdout);
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  runner.comm().Barrier();  // nobody tears down while a peer still gathers
  runner.comm().Finish();
  std::fflush(stdout);
  return 0;
}

}  // namespace ddp::bench
