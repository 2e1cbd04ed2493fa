// bazel run //bench/peers:gather_loop -- [--world_size 2] [--iters 2000]
//     [--count 128] [--sched batch|normal]
//
// The loop bench/peers/profile_small.py profiles: on W spawned Gloo ranks,
// `iters` times (barrier; all_gather of `count` float64; all_reduce of one
// double), which is one timed iteration of bench/padding's floor_allgather,
// with nothing else in the process. Rank 0 prints one JSON line:
//   {"W": 2, "iters": 2000, "count": 128, "sched": "batch", "mean_us": ...}
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/common/sched.h"
#include "bench/common/spawn.h"
#include "core/cli/flags.h"
#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"

namespace ddp::bench {
namespace {

struct Config {
  int world_size = 2;
  int iters = 2000;
  int count = 128;
  std::string sched = "batch";
};

int Rank(const launch::RankEnv& env, const Config& cfg) {
  UseSchedPolicy(cfg.sched);  // before Gloo's threads exist: they inherit it
  comm::CommOptions o = comm::OptionsFromRankEnv(env);
  o.backend = "gloo";
  o.record_progress = false;
  auto comm = comm::MakeComm(o);
  std::vector<double> in(static_cast<std::size_t>(cfg.count), 1.0);
  std::vector<double> out(in.size() * static_cast<std::size_t>(env.world_size));
  double t = 0;
  auto step = [&] {
    comm->Barrier();
    comm->Allgather(in.data(), out.data(), in.size(), comm::DType::kFloat64);
    comm->Allreduce(std::span<double>(&t, 1), comm::ReduceOp::kMax);
  };
  for (int i = 0; i < 20; ++i) step();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < cfg.iters; ++i) step();
  const double mean = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                      (cfg.iters > 0 ? cfg.iters : 1);
  if (env.rank == 0) {
    std::printf("{\"W\": %d, \"iters\": %d, \"count\": %d, \"sched\": \"%s\", \"mean_us\": %.3f}\n",
                env.world_size, cfg.iters, cfg.count, cfg.sched.c_str(), mean * 1e6);
  }
  comm->Finish();
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
  flags.ParseOrExit(argc, argv);
  return ddp::bench::SpawnAndPrintRankZero(
      "gather_loop", cfg.world_size,
      [&](const ddp::launch::RankEnv& env) { return ddp::bench::Rank(env, cfg); },
      std::chrono::seconds(600));
}
