// repro/small_batch_bn: BatchNorm with 2 samples per rank under DDP (seed 003).
// Runs the variants of variants.cc; see README.md.
#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/variants.h"

int main(int argc, char** argv) {
  ddp::small_batch_bn::PairOptions o;
  ddp::harness::PairSpec spec;
  spec.program = "repro_small_batch_bn";
  spec.summary =
      "Trains TinyCnn with per-rank BatchNorm under DDP (W ranks x --batch_size samples) on\n"
      "TinyImages and measures the cross-rank spread of the BN statistics, the running-stat\n"
      "error against the population, and validation accuracy vs one process on the same batches.";
  spec.defaults.world_size = 4;
  spec.defaults.batch_size = 2;
  spec.defaults.n = 512;
  spec.defaults.seeds = 3;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &o.sweep, "per-rank batch {2,4,8,16,32} x W {1,2,4,8}, plus grad_accum at W {2,4,8}");
    flags.Int("epochs", &o.epochs, "training epochs", 1, 1000);
    flags.Double("lr", &o.lr, "SGD learning rate (momentum 0.9)", 1e-6, 10);
  };
  spec.validate = [](const ddp::harness::CommonFlags& f) -> std::string {
    if (f.n < 64) return "--n must be >= 64 (got " + std::to_string(f.n) + ")";
    return "";
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) { return ddp::small_batch_bn::RunRepro(f, o); };
  return ddp::harness::PairMain(argc, argv, spec);
}
