// bazel run //bench/peers:gather_loop -- [--world_size 2] [--iters 2000]
//     [--count 128] [--counts c0,c1,...] [--sched batch|normal] [--engine comm|gloo]
//     [--pin_cpus]
//
// The loop bench/peers/profile_small.py profiles: on W spawned Gloo ranks,
// `iters` times (barrier; all_gather of `count` float64; all_reduce of one
// double), which is one timed iteration of bench/padding's floor_allgather,
// with nothing else in the process. --engine comm goes through our Comm API
// (default options, as in the benchmarks); --engine gloo calls Gloo's
// own collectives on a context of its own, so the two show what the Comm
// layer adds. --counts (one per rank; --engine comm) makes the gather an
// allgatherv with those counts, every rank knowing them (bench/padding's
// known_counts), which bench/padding/cpu_split.py runs with --pin_cpus to
// see which CPU does the work. Rank 0 prints one JSON line:
//   {"W": 2, "iters": 2000, "count": 128, "sched": "batch", "engine": "comm",
//    "mean_us": ...}
#include <chrono>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/common/sched.h"
#include "bench/common/spawn.h"
#include "core/cli/flags.h"
#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace ddp::bench {
namespace {

struct Config {
  int world_size = 2;
  int iters = 2000;
  int count = 128;
  std::string sched = "batch";
  std::string engine = "comm";
  std::vector<int> counts;  // empty: an all_gather of `count` per rank
  bool pin_cpus = false;
};

// One (barrier; all_gather; all_reduce) step, through the Comm API or
// straight through Gloo.
class Loop {
 public:
  virtual ~Loop() = default;
  virtual void Step() = 0;
  virtual void Finish() {}
};

class CommLoop final : public Loop {
 public:
  CommLoop(const launch::RankEnv& env, int count, const std::vector<int>& counts) {
    comm::CommOptions o = comm::OptionsFromRankEnv(env);
    o.backend = "gloo";
    comm_ = comm::MakeComm(o);
    if (counts.empty()) {
      in_.assign(static_cast<std::size_t>(count), 1.0);
      out_.resize(in_.size() * static_cast<std::size_t>(env.world_size));
      return;
    }
    std::size_t total = 0;
    for (int c : counts) {
      counts_.push_back(static_cast<std::size_t>(c));
      total += counts_.back();
    }
    in_.assign(counts_[static_cast<std::size_t>(env.rank)], 1.0);
    out_.resize(total);
  }
  void Step() override {
    comm_->Barrier();
    if (counts_.empty()) {
      comm_->Allgather(in_.data(), out_.data(), in_.size(), comm::DType::kFloat64);
    } else {
      comm_->Allgatherv(in_.data(), in_.size(), out_.data(), counts_, comm::DType::kFloat64);
    }
    comm_->Allreduce(std::span<double>(&t_, 1), comm::ReduceOp::kMax);
  }
  void Finish() override { comm_->Finish(); }

 private:
  std::unique_ptr<comm::Comm> comm_;
  std::vector<std::size_t> counts_;
  std::vector<double> in_, out_;
  double t_ = 0;
};

class GlooLoop final : public Loop {
 public:
  GlooLoop(const launch::RankEnv& env, int count) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto store = store::PrefixedStore(store::OpenStore(env.rdzv), "bare_gloo");
    context_ = std::make_shared<gloo::rendezvous::Context>(env.rank, env.world_size);
    context_->setTimeout(std::chrono::seconds(60));
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    context_->connectFullMesh(*store, device);
    in_.assign(static_cast<std::size_t>(count), 1.0);
    out_.resize(in_.size() * static_cast<std::size_t>(env.world_size));
  }
  void Step() override {
    {
      gloo::BarrierOptions o(context_);
      o.setTag(tag_++);
      gloo::barrier(o);
    }
    {
      gloo::AllgatherOptions o(context_);
      o.setInput(in_.data(), in_.size());
      o.setOutput(out_.data(), out_.size());
      o.setTag(tag_++);
      gloo::allgather(o);
    }
    {
      gloo::AllreduceOptions o(context_);
      o.setOutput(&t_, 1);
      o.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
      o.setTag(tag_++);
      gloo::allreduce(o);
    }
  }

 private:
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::vector<double> in_, out_;
  double t_ = 0;
  uint32_t tag_ = 0;
};

int Rank(const launch::RankEnv& env, const Config& cfg) {
  UseSchedPolicy(cfg.sched);  // before Gloo's threads exist: they inherit it
  if (cfg.pin_cpus) PinToCpu(env.rank);  // likewise
  std::unique_ptr<Loop> loop;
  if (cfg.engine == "gloo") {
    loop = std::make_unique<GlooLoop>(env, cfg.count);
  } else {
    loop = std::make_unique<CommLoop>(env, cfg.count, cfg.counts);
  }
  for (int i = 0; i < 20; ++i) loop->Step();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < cfg.iters; ++i) loop->Step();
  const double mean = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                      (cfg.iters > 0 ? cfg.iters : 1);
  if (env.rank == 0) {
    std::printf(
        "{\"W\": %d, \"iters\": %d, \"count\": %d, \"sched\": \"%s\", \"engine\": \"%s\", "
        "\"pinned\": %s, \"mean_us\": %.3f}\n",
        env.world_size, cfg.iters, cfg.count, cfg.sched.c_str(), cfg.engine.c_str(),
        cfg.pin_cpus ? "true" : "false", mean * 1e6);
  }
  loop->Finish();
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  ddp::bench::Config cfg;
  ddp::cli::Flags flags("gather_loop",
                        "W Gloo ranks run (barrier; all_gather; all_reduce) in a loop, the "
                        "workload bench/peers/profile_small.py profiles; one JSON line.");
  flags.Int("world_size", &cfg.world_size, "number of ranks to spawn", 1, 64);
  flags.Int("iters", &cfg.iters, "timed iterations (after 20 of warm-up)", 0, 10000000);
  flags.Int("count", &cfg.count, "float64 per rank in the all_gather", 1, 1 << 24);
  flags.Choice("sched", &cfg.sched, "scheduling class of the ranks (bench/common/sched.h)",
               ddp::bench::SchedPolicies());
  flags.IntList("counts", &cfg.counts,
                "float64 per rank, one per rank (an allgatherv with counts every rank knows; "
                "--engine comm only); unset: an all_gather of --count",
                0, 1 << 24);
  flags.Bool("pin_cpus", &cfg.pin_cpus,
             "pin rank r (and its Gloo threads) to the (r mod n)-th allowed CPU");
  flags.Choice("engine", &cfg.engine,
               "comm: our Comm API; gloo: Gloo's own collectives on a context of its own",
               {"comm", "gloo"});
  flags.ParseOrExit(argc, argv);
  if (!cfg.counts.empty() &&
      (cfg.counts.size() != static_cast<std::size_t>(cfg.world_size) || cfg.engine != "comm")) {
    std::fprintf(stderr,
                 "gather_loop: --counts needs one count per rank (%d) and --engine comm\n",
                 cfg.world_size);
    return 2;
  }
  return ddp::bench::SpawnAndPrintRankZero(
      "gather_loop", cfg.world_size,
      [&](const ddp::launch::RankEnv& env) { return ddp::bench::Rank(env, cfg); },
      std::chrono::seconds(600));
}
