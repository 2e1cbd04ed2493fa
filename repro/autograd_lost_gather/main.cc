// repro/autograd_lost_gather: a loss over all_gathered features whose
// gathered copies carry no gradient (seed 002). See README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/autograd_lost_gather/variants.h"

int main(int argc, char** argv) {
  ddp::autograd_lost_gather::PairFlags pair;
  ddp::harness::PairSpec spec;
  spec.program = "repro_autograd_lost_gather";
  spec.summary =
      "Computes a global soft-AUC loss and a per-rank InfoNCE loss over all_gathered model\n"
      "outputs with the gather detached and with the seed's fix (own slot re-inserted),\n"
      "averages gradients as DDP does, and compares with the one-process gradient of the\n"
      "full-batch objective; then trains --steps SGD steps with each. --n is the held-out\n"
      "set size, --batch_size the rows per rank per step, --seeds the gradient-check seeds;\n"
      "--drop_last has no effect (batches are drawn fresh each step, no sampler).";
  spec.min_world_size = 2;  // with one rank every gather is exact
  spec.defaults.seeds = 3;
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    ddp::autograd_lost_gather::AddPairFlags(flags, &pair);
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&pair.device)};
  spec.validate = [&](const ddp::harness::CommonFlags& f) {
    return ddp::autograd_lost_gather::ValidatePair(f, pair);
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::autograd_lost_gather::RunRepro(f, pair);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
