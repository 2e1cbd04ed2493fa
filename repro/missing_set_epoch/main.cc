// repro/missing_set_epoch: no sampler.set_epoch(epoch) (seed 001).
// Runs the variants of variants.cc; see README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/missing_set_epoch/variants.h"

int main(int argc, char** argv) {
  ddp::missing_set_epoch::PairOptions options;
  ddp::harness::PairSpec spec;
  spec.program = "repro_missing_set_epoch";
  spec.summary =
      "Drives PyTorch's DistributedSampler without set_epoch (every epoch replays epoch 0) and\n"
      "with per-rank seeds (what seed 001 describes: shares overlap), measures orders and\n"
      "coverage through all_gather, and trains the MLP both ways to show the effect on curves.";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Int("epochs", &options.epochs, "epochs per seed", 2, 1000);
    flags.Bool("sweep", &options.sweep, "W in {2,4,8,--world_size}, N in {--n,10000}");
    flags.Bool("train", &options.train, "also train the MLP both ways (the curves)");
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&options.device)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::missing_set_epoch::RunRepro(f, options);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
