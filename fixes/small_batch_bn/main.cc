// fixes/small_batch_bn: SyncBatchNorm, GroupNorm, PreciseBN under DDP.
// Runs the fixes of fix_run.cc; see README.md.
#include "core/harness/pair_main.h"
#include "fixes/small_batch_bn/fix_run.h"

int main(int argc, char** argv) {
  ddp::small_batch_bn::PairOptions o;
  ddp::harness::PairSpec spec;
  spec.program = "fix_small_batch_bn";
  spec.summary =
      "Trains TinyCnn under DDP with SyncBatchNorm, GroupNorm and BatchNorm + PreciseBN; checks\n"
      "SyncBN and GroupNorm against one process on the same global batches (1e-9 relative) and\n"
      "that PreciseBN shrinks the running-stat error.";
  spec.defaults.world_size = 4;
  spec.defaults.batch_size = 2;
  spec.defaults.n = 512;
  spec.defaults.seeds = 3;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &o.sweep, "W {2,4,8} x per-rank batch {2,8,32}");
    flags.Int("epochs", &o.epochs, "training epochs", 1, 1000);
    flags.Double("lr", &o.lr, "SGD learning rate (momentum 0.9)", 1e-6, 10);
    flags.Int("precise_batches", &o.precise_batches, "PreciseBN: batches averaged per rank (M)", 1, 100000);
  };
  spec.validate = [](const ddp::harness::CommonFlags& f) -> std::string {
    if (f.n < 64) return "--n must be >= 64 (got " + std::to_string(f.n) + ")";
    return "";
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) { return ddp::small_batch_bn::RunFix(f, o); };
  return ddp::harness::PairMain(argc, argv, spec);
}
