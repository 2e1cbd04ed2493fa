// fixes/missing_set_epoch: shared seed + sampler.set_epoch(epoch) (seed 001).
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
      "100% coverage, duplicates = the sampler's padding, a new order every epoch.";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Int("epochs", &options.epochs, "epochs per seed", 2, 1000);
    flags.Bool("sweep", &options.sweep, "W in {2,4,8,--world_size}, N in {--n,10000}");
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::missing_set_epoch::RunFix(f, options);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
