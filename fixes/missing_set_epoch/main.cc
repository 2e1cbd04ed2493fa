// fixes/missing_set_epoch: shared seed + sampler.set_epoch(epoch) (seed 001).
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/missing_set_epoch/fix_run.h"

int main(int argc, char** argv) {
  ddp::missing_set_epoch::PairOptions options;
  options.train = false;
  ddp::harness::PairSpec spec;
  spec.program = "fix_missing_set_epoch";
  spec.summary =
      "Calls sampler.set_epoch(epoch) with one shared seed, all-gathers what the ranks iterate\n"
      "every epoch and checks it against the one-process order randperm(N, seed + epoch):\n"
      "100% coverage, duplicates = the sampler's padding, a new order every epoch. Then trains\n"
      "with it: every step must equal the one-process step from the same state (averaged\n"
      "gradient, parameters, momentum, BatchNorm running statistics; 1e-12 relative).";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Int("epochs", &options.epochs, "epochs per seed (orders) and of training", 2, 1000);
    flags.Bool("sweep", &options.sweep,
               "W in {1,2,3,4,5,8,--world_size}, N in {--n,10000}, training batch in "
               "{1,2,3,8,--batch_size}");
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&options.device)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::missing_set_epoch::RunFix(f, options, ddp::missing_set_epoch::Grid(f, options));
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
