// repro/mean_of_means: averaging per-rank averages (seed 004).
// Runs the variants of variants.cc over the rows of sweep.h; see README.md.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "repro/mean_of_means/sweep.h"
#include "repro/mean_of_means/variants.h"

int main(int argc, char** argv) {
  ddp::mean_of_means::RowFlags rows;
  ddp::harness::PairSpec spec;
  spec.program = "repro_mean_of_means";
  spec.summary =
      "Averages per-rank (or per-step) metric averages over W ranks, as seed 004 does, and\n"
      "compares with the one-process accuracy and loss over the N distinct samples.";
  spec.defaults.seeds = 5;
  spec.add_flags = [&](ddp::cli::Flags& flags) { ddp::mean_of_means::AddRowFlags(flags, &rows); };
  spec.shared_flags = {ddp::device::DeviceFlag(&rows.device)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::mean_of_means::RunRepro(f, rows.sweep, !rows.no_lightning, rows.device);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
