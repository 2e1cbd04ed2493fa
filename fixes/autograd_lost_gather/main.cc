// fixes/autograd_lost_gather: the differentiable all_gather (its backward
// sums every rank's gradient back to the owner), and the condition under
// which the seed's fix is exact. See README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/autograd_lost_gather/fix_run.h"

int main(int argc, char** argv) {
  ddp::autograd_lost_gather::PairFlags pair;
  ddp::harness::PairSpec spec;
  spec.program = "fix_autograd_lost_gather";
  spec.summary =
      "Gathers model outputs with a differentiable all_gather (backward: reduce_scatter, or\n"
      "all-reduce + own slice) under a global soft-AUC loss and a per-rank InfoNCE loss, even\n"
      "uneven and empty-rank per-rank batches, and checks the DDP-averaged gradient against\n"
      "the one-process gradient of the full-batch objective (1e-12 relative, double); also the\n"
      "seed's fix with the loss times W on the global loss. Then trains --steps SGD steps, every\n"
      "step judged against the one-process step from the same parameters (1e-12). --sweep: W in\n"
      "{1,2,3,4,5,8} and a training grid of per-rank batches {1,2,3,8} x layouts.\n"
      "--n is the held-out set size, --batch_size the rows per rank per step; --drop_last has\n"
      "no effect (batches are drawn fresh each step, no sampler).";
  spec.defaults.seeds = 3;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    ddp::autograd_lost_gather::AddPairFlags(
        flags, &pair,
        "run W in {1,2,3,4,5,8} (training curves on {2,4,8}) and the training grid instead of "
        "--world_size");
    flags.Int("grid_steps", &pair.grid_steps,
              "steps per training-grid configuration (--sweep; 0: no grid)", 0, 100000);
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&pair.device)};
  spec.validate = [&](const ddp::harness::CommonFlags& f) {
    return ddp::autograd_lost_gather::ValidateFix(f, pair);
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::autograd_lost_gather::RunFix(f, ddp::autograd_lost_gather::FixPairFlags(pair));
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
