// bazel run //bench/peers:norm_peer -- [--world_size 4] [--norm sync_bn]
//     [--channels 16,64,256] [--n 2,8,32] [--hw 8] [--groups 8] [--iters 20]
//
// Our side of the BN/GroupNorm rows of bench/peers/peers.py: one training
// forward + backward of a norm layer (core/nn, float32, Eigen, one thread
// per rank) on W spawned ranks, x of shape N x C x hw x hw per rank. Per
// iteration: barrier; t0; y = Forward(x); dx = Backward(dy); the slowest
// rank's time (all_reduce max). Prints one JSON object per shape:
//   {"norm": "sync_bn", "W": 4, "C": 16, "N": 2, "hw": 8, "iters": 20, "mean_s": ...}
//
// Every rank runs SCHED_BATCH by default (--sched; bench/common/sched.h says
// why) and keeps freed heap memory (mallopt; --keep_freed_memory=false
// turns it off): by default glibc hands a freed heap top back to the kernel,
// so a loop that allocates and frees megabyte tensors page-faults on every
// call (measured here at C=256, N=32: about 990 page faults per forward +
// backward, against about 19 in a PyTorch rank, whose heap top Python's own
// objects keep in place). Without it this benchmark would time the kernel's
// page-fault path, not the layers.
//
// sync_bn is BatchNorm with core/nn's merge hooks on the Comm API: one
// all_gather of every rank's (count, mean, M2) per channel in the forward,
// one all_reduce of (sum dy, sum dy*xhat) in the backward, the same two
// collectives PyTorch's SyncBatchNorm issues. batch_norm (local statistics)
// and group_norm (no communication) are the other rows.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/sched.h"
#include "bench/common/spawn.h"
#include "bench/peers/sync_hooks.h"
#include "core/cli/flags.h"
#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/rng.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;
using S = float;
#ifdef __OPTIMIZE__
constexpr bool kOptimized = true;
#else
constexpr bool kOptimized = false;
#endif

struct Config {
  int world_size = 4;
  std::string norm = "sync_bn";
  std::vector<int> channels = {16, 64, 256};
  std::vector<int> n = {2, 8, 32};
  int hw = 8;
  int groups = 8;
  int iters = 20;
  int warmup = 3;
  double timeout_s = 120;
  bool keep_freed_memory = true;
  std::string sched = "batch";
};

// Freed memory stays in the process: no trimming of the heap top, and
// tensors up to 32 MiB (glibc's largest mmap threshold) come from the heap.
void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

std::unique_ptr<nn::NormLayer<S>> MakeLayer(const Config& cfg, int channels, comm::Comm& comm) {
  if (cfg.norm == "group_norm") return std::make_unique<nn::GroupNorm<S>>(channels, cfg.groups);
  if (cfg.norm == "batch_norm") return std::make_unique<nn::BatchNorm<S>>(channels);
  return std::make_unique<nn::BatchNorm<S>>(channels, nn::BatchNormOptions{},
                                                SyncBatchNormHooks<S>(comm));
}

nn::Tensor4<S> Random(int n, int c, int hw, nn::Rng& rng) {
  nn::Tensor4<S> t(n, c, hw, hw);
  for (std::int64_t i = 0; i < t.Size(); ++i) t.data[i] = static_cast<S>(rng.Normal());
  return t;
}

int Rank(const launch::RankEnv& env, const Config& cfg) {
  if (cfg.keep_freed_memory) KeepFreedMemory();
  UseSchedPolicy(cfg.sched);  // before Gloo's threads exist: they inherit it
  comm::CommOptions o = comm::OptionsFromRankEnv(env);
  o.backend = "gloo";
  o.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.timeout_s * 1000));
  auto comm = comm::MakeComm(o);
  nn::Rng rng(1234 + static_cast<std::uint64_t>(env.rank));
  for (int c : cfg.channels) {
    for (int n : cfg.n) {
      auto layer = MakeLayer(cfg, c, *comm);
      layer->SetTraining(true);
      const nn::Tensor4<S> x = Random(n, c, cfg.hw, rng);
      const nn::Tensor4<S> dy = Random(n, c, cfg.hw, rng);
      double total = 0;
      for (int it = 0; it < cfg.warmup + cfg.iters; ++it) {
        comm->Barrier();
        const auto t0 = Clock::now();
        const nn::Tensor4<S> y = layer->Forward(x);
        const nn::Tensor4<S> dx = layer->Backward(dy);
        double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        comm->Allreduce(std::span<double>(&dt, 1), comm::ReduceOp::kMax);
        if (it >= cfg.warmup) total += dt;
        if (y.Size() != x.Size() || dx.Size() != x.Size()) return 1;
      }
      if (env.rank == 0) {
        std::printf(
            "{\"norm\": \"%s\", \"W\": %d, \"C\": %d, \"N\": %d, \"hw\": %d, \"iters\": %d, "
            "\"mean_s\": %.9g, \"optimized\": %s, \"keep_freed_memory\": %s, "
            "\"sched\": \"%s\"}\n",
            cfg.norm.c_str(), env.world_size, c, n, cfg.hw, cfg.iters, total / cfg.iters,
            kOptimized ? "true" : "false", cfg.keep_freed_memory ? "true" : "false",
            cfg.sched.c_str());
        std::fflush(stdout);
      }
    }
  }
  comm->Finish();
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  ddp::bench::Config cfg;
  ddp::cli::Flags flags("norm_peer",
                        "Times a norm layer's training forward + backward on W Gloo ranks "
                        "(our side of bench/peers/peers.py); one JSON line per shape.");
  flags.Int("world_size", &cfg.world_size, "number of ranks to spawn", 1, 64);
  flags.Choice("norm", &cfg.norm, "layer", {"sync_bn", "batch_norm", "group_norm"});
  flags.IntList("channels", &cfg.channels, "channel counts C", 1, 4096);
  flags.IntList("n", &cfg.n, "samples per rank N (sync_bn/batch_norm need N*hw*hw > 1)", 1, 4096);
  flags.Int("hw", &cfg.hw, "spatial size (hw x hw)", 1, 512);
  flags.Int("groups", &cfg.groups, "group_norm: groups (must divide every C)", 1, 4096);
  flags.Int("iters", &cfg.iters, "timed iterations per shape", 1, 100000);
  flags.Int("warmup", &cfg.warmup, "untimed iterations per shape", 0, 1000);
  flags.Double("timeout", &cfg.timeout_s, "deadline of every collective, seconds", 1, 3600);
  flags.Choice("sched", &cfg.sched,
               "scheduling class of the rank processes (see bench/common/sched.h)",
               ddp::bench::SchedPolicies());
  flags.Bool("keep_freed_memory", &cfg.keep_freed_memory,
             "keep freed heap memory in each rank (no page faults per call; see the source)");
  flags.ParseOrExit(argc, argv);
  if (cfg.norm == "group_norm") {
    for (int c : cfg.channels) {
      if (c % cfg.groups != 0) {
        std::fprintf(stderr, "norm_peer: --groups %d does not divide --channels value %d\n",
                     cfg.groups, c);
        return 2;
      }
    }
  }
#ifndef __OPTIMIZE__
  std::fprintf(stderr, "norm_peer: warning: built without optimization (Bazel's default "
               "fastbuild): Eigen at -O0 is many times slower; use bazel run -c opt\n");
#endif
  return ddp::bench::SpawnAndPrintRankZero(
      "norm_peer", cfg.world_size,
      [&](const ddp::launch::RankEnv& env) { return ddp::bench::Rank(env, cfg); },
      std::chrono::seconds(1800));
}
