// bench/sync_bn: forward + backward time per call of local BatchNorm,
// SyncBatchNorm and GroupNorm on W real ranks (Gloo by default), with the
// time spent inside collectives separated from compute, the bytes and
// collectives per step, and the one-collective latency floor (the same
// all-gather + all-reduce alone) measured in the same run.
//
// Google Benchmark across ranks: every rank registers the same benchmarks
// and runs them with a FIXED iteration count that rank 0 decides once
// (a short calibration) and broadcasts — a rank running one iteration more
// than its peers would wait forever in a collective (the very bug studied
// in drop_last_hang). Each iteration starts after a barrier and is timed
// manually; rank 0 reports (console table, --benchmark_format /
// --benchmark_out), the other ranks discard their reports.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/benchmark_flags.h"
#include "core/cli/flags.h"
#include "core/comm/make_comm.h"
#include "core/comm/options.h"
#include "core/launch/spawn.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/rng.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;
using S = float;

struct Settings {
  int world_size = 4;
  std::string backend = "gloo";
  int spatial = 8;
  std::vector<int> channels = {16, 64, 256, 1024};
  std::vector<int> batches = {2, 8, 32};
  double target_s = 0.25;  // calibration target per benchmark
  double timeout = 60;
};

// Discards what non-zero ranks would report.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

enum class Kind { kBn, kSyncBn, kGroupNorm, kFloor };
const char* Name(Kind k) {
  switch (k) {
    case Kind::kBn: return "bn";
    case Kind::kSyncBn: return "sync_bn";
    case Kind::kGroupNorm: return "group_norm";
    case Kind::kFloor: return "comm_floor";
  }
  return "?";
}
constexpr Kind kKinds[] = {Kind::kBn, Kind::kSyncBn, Kind::kGroupNorm, Kind::kFloor};

// "/C:<c>/N:<n>/HW:<s>x<s>": the shape part of a benchmark's name.
std::string ShapeTail(int c, int n, int spatial) {
  return "/C:" + std::to_string(c) + "/N:" + std::to_string(n) + "/HW:" + std::to_string(spatial) + "x" +
         std::to_string(spatial);
}

// The names this run registers, in order (Google Benchmark appends
// "/iterations:K/manual_time" when it reports them).
std::vector<std::string> BenchmarkNames(const Settings& s) {
  std::vector<std::string> names;
  for (int c : s.channels) {
    for (int n : s.batches) {
      for (Kind kind : kKinds) names.push_back(Name(kind) + ShapeTail(c, n, s.spatial));
    }
  }
  return names;
}

// One benchmark's state on this rank.
struct Case {
  Kind kind;
  int c, n;
  std::unique_ptr<nn::NormLayer<S>> layer;
  nn::Tensor4<S> x, dy;
  double comm_s = 0;  // seconds inside collectives, accumulated by the hooks
  small_batch_bn::SyncBnTraffic traffic;
};

struct Summary {
  double time_s = 0, comm_s = 0;
};

int GroupsFor(int c) { return std::min(32, std::max(1, c / 2)); }

std::unique_ptr<Case> MakeCase(comm::Comm& comm, Kind kind, int c, int n, int spatial) {
  auto cs = std::make_unique<Case>();
  cs->kind = kind;
  cs->c = c;
  cs->n = n;
  nn::Rng rng(comm.rank() * 7919 + c * 31 + n);
  cs->x = nn::Tensor4<S>(n, c, spatial, spatial);
  cs->dy = nn::Tensor4<S>(n, c, spatial, spatial);
  for (Eigen::Index i = 0; i < cs->x.data.size(); ++i) {
    cs->x.data[i] = static_cast<S>(rng.Normal(3, 2));
    cs->dy.data[i] = static_cast<S>(rng.Normal());
  }
  if (kind == Kind::kBn) cs->layer = std::make_unique<nn::BatchNorm<S>>(c);
  if (kind == Kind::kGroupNorm) cs->layer = std::make_unique<nn::GroupNorm<S>>(c, GroupsFor(c));
  if (kind == Kind::kSyncBn) {
    nn::BatchNormHooks<S> inner = small_batch_bn::SyncBatchNormHooks<S>(comm, &cs->traffic);
    Case* raw = cs.get();
    nn::BatchNormHooks<S> timed;
    timed.merge_stats = [inner, raw](const nn::ChannelStats<S>& l) {
      const auto t0 = Clock::now();
      auto r = inner.merge_stats(l);
      raw->comm_s += Seconds(t0, Clock::now());
      return r;
    };
    timed.merge_grad_sums = [inner, raw](const nn::ChannelGradSums<S>& l) {
      const auto t0 = Clock::now();
      auto r = inner.merge_grad_sums(l);
      raw->comm_s += Seconds(t0, Clock::now());
      return r;
    };
    cs->layer = std::make_unique<nn::BatchNorm<S>>(c, nn::BatchNormOptions{}, timed);
  }
  return cs;
}

// One forward + backward (or, for the floor, the two collectives alone).
void Step(comm::Comm& comm, Case& cs, std::vector<S>& gather_in, std::vector<S>& reduce_buf) {
  if (cs.kind == Kind::kFloor) {
    const auto t0 = Clock::now();
    std::vector<S> all = comm.Allgather(std::span<const S>(gather_in));
    benchmark::DoNotOptimize(all.data());
    comm.Allreduce(std::span<S>(reduce_buf));
    cs.comm_s += Seconds(t0, Clock::now());
    return;
  }
  nn::Tensor4<S> y = cs.layer->Forward(cs.x);
  benchmark::DoNotOptimize(y.data.data());
  nn::Tensor4<S> dx = cs.layer->Backward(cs.dy);
  benchmark::DoNotOptimize(dx.data.data());
}

int RankMain(const launch::RankEnv& env, const Settings& s, std::vector<char*> gb_args) {
  comm::CommOptions opts = comm::OptionsFromRankEnv(env);
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout * 1000));
  auto comm = comm::MakeComm(opts);
  const bool leader = comm->rank() == 0;
  if (!leader) {
    // Only rank 0 writes --benchmark_out / chooses the format.
    std::vector<char*> kept;
    for (char* a : gb_args) {
      const std::string arg = a;
      if (arg.rfind("--benchmark_out", 0) != 0 && arg.rfind("--benchmark_format", 0) != 0) kept.push_back(a);
    }
    gb_args = kept;
  }
  int gb_argc = static_cast<int>(gb_args.size());
  gb_args.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_args.data());

  // Calibration: every rank runs a few synchronised SyncBN steps per
  // configuration; rank 0 turns its timing into an iteration count.
  std::vector<std::pair<int, int>> shapes;
  for (int c : s.channels) {
    for (int n : s.batches) shapes.push_back({c, n});
  }
  std::vector<int64_t> iters(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto cs = MakeCase(*comm, Kind::kSyncBn, shapes[i].first, shapes[i].second, s.spatial);
    std::vector<S> g, r;
    Step(*comm, *cs, g, r);  // warm-up
    comm->Barrier();
    const auto t0 = Clock::now();
    for (int k = 0; k < 2; ++k) Step(*comm, *cs, g, r);
    const double per = Seconds(t0, Clock::now()) / 2;
    iters[i] = std::clamp<int64_t>(static_cast<int64_t>(s.target_s / std::max(per, 1e-7)), 3, 1000);
  }
  comm->Broadcast(std::span<int64_t>(iters), 0);  // the one decision every rank follows

  std::map<std::string, Summary> summary;
  std::vector<std::unique_ptr<Case>> cases;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto [c, n] = shapes[i];
    for (Kind kind : kKinds) {
      cases.push_back(MakeCase(*comm, kind, c, n, s.spatial));
      Case* cs = cases.back().get();
      const std::string name = Name(kind) + ShapeTail(c, n, s.spatial);
      comm::Comm* cm = comm.get();
      const int w = comm->world_size();
      benchmark::RegisterBenchmark(name.c_str(), [cs, cm, w, name, &summary](benchmark::State& state) {
        std::vector<S> gather_in(2 * cs->c + 1, 1.0f), reduce_buf(2 * cs->c, 1.0f);
        cs->comm_s = 0;
        cs->traffic = {};
        double total = 0;
        for (auto _ : state) {
          cm->Barrier();  // every rank starts the iteration together
          const auto t0 = Clock::now();
          Step(*cm, *cs, gather_in, reduce_buf);
          const double dt = Seconds(t0, Clock::now());
          total += dt;
          state.SetIterationTime(dt);
        }
        const double it = static_cast<double>(state.iterations());
        const bool sync = cs->kind == Kind::kSyncBn || cs->kind == Kind::kFloor;
        const double collectives = sync ? 2 : 0;
        // Per step: all-gather of 2C+1 (W x that received) + all-reduce of 2C.
        const double contributed = sync ? (4 * cs->c + 1) * sizeof(S) : 0;
        const double received = sync ? (w * (2 * cs->c + 1) + 2 * cs->c) * sizeof(S) : 0;
        if (cs->kind == Kind::kSyncBn && it > 0) {
          // Cross-check the formula against what the layer really sent.
          if (cs->traffic.collectives != static_cast<int64_t>(2 * it) ||
              cs->traffic.bytes_received != static_cast<int64_t>(received * it)) {
            state.SkipWithError("SyncBN traffic differs from the formula");
          }
        }
        state.counters["comm_us"] = 1e6 * cs->comm_s / it;
        state.counters["compute_us"] = 1e6 * (total - cs->comm_s) / it;
        state.counters["collectives"] = collectives;
        state.counters["bytes_sent"] = contributed;
        state.counters["bytes_recv"] = received;
        // PyTorch 1.13 SyncBatchNorm for the same shape (torch/nn/modules/_functions.py):
        // all_gather of cat(mean, invstd, count) = 2C+1 and all_reduce of
        // cat(sum_dy, sum_dy_xmu) = 2C: the same two collectives and bytes.
        if (cs->kind == Kind::kSyncBn) {
          state.counters["torch_collectives"] = 2;
          state.counters["torch_bytes_recv"] = (w * (2 * cs->c + 1) + 2 * cs->c) * sizeof(S);
        }
        summary[name] = {total / it, cs->comm_s / it};
      })->Iterations(iters[i])->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
  }
  NullReporter null_reporter;
  if (leader) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    benchmark::RunSpecifiedBenchmarks(&null_reporter);
  }
  benchmark::Shutdown();
  if (leader) {
    std::printf("\nsummary (W=%d, %s, float, HxW %dx%d): SyncBN overhead over BN, and its collective time vs "
                "the floor (the same all-gather + all-reduce alone)\n",
                comm->world_size(), comm->backend().c_str(), s.spatial, s.spatial);
    for (const auto& [c, n] : shapes) {
      const std::string tail = ShapeTail(c, n, s.spatial);
      if (!summary.count("bn" + tail) || !summary.count("sync_bn" + tail) || !summary.count("comm_floor" + tail)) {
        continue;  // filtered out
      }
      const Summary bn = summary["bn" + tail], sync = summary["sync_bn" + tail];
      const Summary gn = summary.count("group_norm" + tail) ? summary["group_norm" + tail] : Summary{};
      const Summary floor = summary["comm_floor" + tail];
      std::printf(
          "C=%-5d N=%-3d bn %9.1f us  sync_bn %9.1f us (comm %8.1f us)  overhead x%.2f  floor %8.1f us  "
          "sync comm/floor %.2f  group_norm %9.1f us\n",
          c, n, 1e6 * bn.time_s, 1e6 * sync.time_s, 1e6 * sync.comm_s, sync.time_s / bn.time_s,
          1e6 * floor.time_s, sync.comm_s / floor.time_s, 1e6 * gn.time_s);
    }
  }
  comm->Finish();
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using ddp::bench::Settings;
  Settings s;
  // --benchmark_* go to Google Benchmark (on every rank), once checked; the
  // rest are ours.
  ddp::bench::BenchmarkFlags bf;
  if (const std::string err = ddp::bench::ParseBenchmarkFlags(
          argc, argv, ddp::bench::CommonBenchmarkFlags(), &bf);
      !err.empty()) {
    std::fprintf(stderr, "sync_bn: %s\n", err.c_str());
    return 2;
  }
  std::vector<char*> ours = bf.ours, gb = {argv[0]};
  for (auto& a : bf.args) gb.push_back(a.data());
  ddp::cli::Flags flags("sync_bn",
                        "Google Benchmark of BatchNorm, SyncBatchNorm and GroupNorm forward+backward on W spawned\n"
                        "ranks, collectives separated from compute, with the one-collective floor.\n"
                        "--benchmark_* flags (format, out, filter) are passed to Google Benchmark.");
  flags.Int("world_size", &s.world_size, "number of ranks to spawn", 1, 64);
  flags.Choice("backend", &s.backend, "collective engine", {"gloo", "nccl"});
  flags.Int("spatial", &s.spatial, "H = W of the feature maps", 1, 256);
  flags.IntList("channels", &s.channels, "channel counts C", 1, 65536);
  flags.IntList("batch", &s.batches, "per-rank batch sizes N", 1, 4096);
  flags.Double("target_s", &s.target_s, "calibration: seconds per benchmark (sets the shared iteration count)",
               1e-4, 60);
  flags.Double("timeout", &s.timeout, "deadline of every collective, seconds", 0.05, 3600);
  flags.ParseOrExit(static_cast<int>(ours.size()), ours.data());
  // A filter that selects none of this run's benchmarks would spawn the ranks
  // for an empty table: a usage error instead.
  const std::vector<std::string> names = ddp::bench::BenchmarkNames(s);
  if (std::none_of(names.begin(), names.end(),
                   [&](const std::string& n) { return ddp::bench::FilterSelects(bf.filter, n); })) {
    std::fprintf(stderr, "sync_bn: --benchmark_filter='%s' selects none of this run's %zu benchmarks (e.g. %s)\n",
                 bf.filter.c_str(), names.size(), names.front().c_str());
    return 2;
  }

  ddp::launch::SpawnOptions so;
  so.backend = s.backend;
  so.fail_fast = true;
  so.share_gpu = s.backend == "nccl";
  so.deadline = std::chrono::seconds(600);
  const auto result = ddp::launch::SpawnRanks(
      s.world_size, [&](const ddp::launch::RankEnv& env) { return ddp::bench::RankMain(env, s, gb); }, so);
  if (!result.ranks.empty()) std::fputs(result.ranks[0].stdout_text.c_str(), stdout);
  if (!result.all_ok()) {
    for (const auto& r : result.ranks) {
      if (!r.ok()) std::fprintf(stderr, "rank %d: %s\n%s", r.rank, r.Describe().c_str(), r.stderr_text.c_str());
    }
    return 1;
  }
  return 0;
}
