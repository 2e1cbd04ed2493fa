// repro/drop_last_hang: ranks with different step counts (seed 001).
// Runs the rows of variants.cc; see README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/drop_last_hang/variants.h"

int main(int argc, char** argv) {
  ddp::drop_last_hang::PairOptions options;
  ddp::harness::PairSpec spec;
  spec.program = "repro_drop_last_hang";
  spec.summary =
      "Trains one epoch on W spawned ranks with a gradient allreduce per step, with the\n"
      "DistributedSampler's padding (control), a naive uneven split, and a data-dependent\n"
      "filter; the extra step's allreduce becomes a deadline error with a desync report,\n"
      "or, with no deadline, a hang that only the launcher's timeout ends.";
  spec.min_world_size = 2;  // one rank has no peer to wait for
  spec.defaults.timeout = 2;  // a short collective deadline: the hang shows in seconds
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Double("hang_world_deadline", &options.hang_world_deadline_s,
                 "launcher timeout of the no-deadline row, seconds", 1, 3600);
    flags.Bool("sweep", &options.sweep, "W in {2,4,8}");
    flags.Double("nccl_startup_allowance", &options.nccl_startup_s,
                 "nccl: seconds the no-deadline row's launcher timeout adds for start-up", 0,
                 3600);
    flags.Bool("controls", &options.controls,
               "run the control rows (ranks with equal steps; --controls=false: the uneven rows "
               "only)");
    flags.Bool("filtered_deadline_row", &options.filtered_deadline_row,
               "run the filtered_batches row of batch 2 (its deadline error at allreduce #120)");
  };
  spec.shared_flags = {ddp::device::DeviceFlag(&options.device)};
  spec.spawns_own_ranks = "its rows hang or kill ranks on purpose";
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::drop_last_hang::RunRepro(f, options);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
