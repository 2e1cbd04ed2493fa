// fixes/mean_of_means: all-reduce (sum, count), not averages.
// Runs the (sum, count) fix of fix_run.cc over the rows of sweep.h; see README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/mean_of_means/sweep.h"
#include "fixes/mean_of_means/fix_run.h"

int main(int argc, char** argv) {
  ddp::mean_of_means::RowFlags rows;
  ddp::harness::PairSpec spec;
  spec.program = "fix_mean_of_means";
  spec.summary =
      "All-reduces (sum, count) over the samples each rank really owns and checks the result\n"
      "against the one-process accuracy and loss (exact to 1e-12).";
  spec.add_flags = [&](ddp::cli::Flags& flags) { ddp::mean_of_means::AddRowFlags(flags, &rows); };
  spec.shared_flags = {ddp::device::DeviceFlag(&rows.device)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::mean_of_means::RunFix(f, rows.sweep, !rows.no_lightning, rows.device);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
