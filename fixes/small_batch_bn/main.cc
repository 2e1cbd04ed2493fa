// fixes/small_batch_bn: SyncBatchNorm, GroupNorm, PreciseBN under DDP.
// Runs the per-step checks of fix_run.cc; see README.md.
#include <numeric>
#include <string>

#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/small_batch_bn/fix_run.h"

int main(int argc, char** argv) {
  ddp::small_batch_bn::FixOptions o;
  ddp::harness::PairSpec spec;
  spec.program = "fix_small_batch_bn";
  spec.summary =
      "Checks SyncBatchNorm, GroupNorm and PreciseBN under DDP (W ranks x --batch_size, Gloo) per step\n"
      "against one process on the same data, every step started from the same state: gradients,\n"
      "parameters and running statistics to 1e-12 relative. The accuracy each reaches is in the repro\n"
      "(bazel run //repro/small_batch_bn -- --sweep).";
  spec.defaults.world_size = 4;
  spec.defaults.batch_size = 2;
  spec.defaults.seeds = 1;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &o.sweep, "W {1,2,3,4,5,8} x per-rank batch {1,2,3,8}, plus uneven batches with empty ranks");
    flags.IntList("batches", &o.batches, "per-rank batches, e.g. 1,3,0,5 (sets W; overrides --world_size/--batch_size)",
                  0, 4096);
    flags.Int("steps", &o.steps, "teacher-forced steps per check", 1, 100000);
    flags.Int("precise_batches", &o.precise_batches, "PreciseBN: batches per rank in each check (M)", 1, 100000);
    flags.Double("lr", &o.lr, "SGD learning rate (momentum 0.9)", 1e-6, 10);
    flags.Double("noise", &o.noise, "digits: pixel noise sd", 0, 10);
  };
  spec.shared_flags = {ddp::device::PlacementFlag(
      "norm_device",
      "where the ranks' norm layers and gradient / PreciseBN all-reduces compute: auto (the GPU under "
      "--backend nccl, else the host), host (Eigen), emulated (the device path on the host), cuda",
      &o.placement)};
  spec.validate = [&](const ddp::harness::CommonFlags& f) -> std::string {
    if (!o.batches.empty() && std::accumulate(o.batches.begin(), o.batches.end(), 0) == 0) {
      return "--batches must give at least one rank a sample (got all zeros)";
    }
    if (o.batches.empty() && f.batch_size > 4096) return "--batch_size must be <= 4096";
    return "";
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) { return ddp::small_batch_bn::RunFix(f, o); };
  return ddp::harness::PairMain(argc, argv, spec);
}
