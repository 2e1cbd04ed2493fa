// fixes/drop_last_hang: equal step counts by drop_last, even batches or a
// join protocol (seed 001); see README.md.
#include <string>

#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/drop_last_hang/fix_run.h"

int main(int argc, char** argv) {
  bool sweep = false;
  std::string device = "auto";
  ddp::harness::PairSpec spec;
  spec.program = "fix_drop_last_hang";
  spec.summary =
      "Trains one epoch in checked mode with drop_last, an even-batches padding, or a join\n"
      "protocol (dividing by the contributing ranks, or by the initial W as PyTorch's Join does by\n"
      "default) over the repro's uneven pipelines. Every rank must run the same collectives, and\n"
      "every step must equal the one-process step from the same state (averaged gradient,\n"
      "parameters, momentum; 1e-12 relative). join_initial_world_size expects `inexact`.";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &sweep, "W in {1,2,3,4,5,8} x per-rank batch in {1,2,3,8}");
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&device)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::drop_last_hang::RunFix(f, ddp::drop_last_hang::Cells(f, sweep), device);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
