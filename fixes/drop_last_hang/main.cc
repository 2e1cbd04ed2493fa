// fixes/drop_last_hang: equal step counts by drop_last, even batches or a
// join protocol (seed 001); see README.md.
#include "core/harness/pair_main.h"
#include "fixes/drop_last_hang/fix_run.h"

int main(int argc, char** argv) {
  bool sweep = false;
  ddp::harness::PairSpec spec;
  spec.program = "fix_drop_last_hang";
  spec.summary =
      "Trains one epoch in checked mode with drop_last, an even-batches padding, or a join\n"
      "protocol over the repro's uneven pipelines; every rank must run the same collectives and\n"
      "every averaged gradient must equal the serial mean over contributing ranks (1e-12).";
  spec.add_flags = [&](ddp::cli::Flags& flags) { flags.Bool("sweep", &sweep, "W in {2,4,8}"); };
  spec.validate = [](const ddp::harness::CommonFlags& f) -> std::string {
    if (f.world_size < 2) return "--world_size must be >= 2 (allowed: 2..64)";
    return "";
  };
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::drop_last_hang::RunFix(f, sweep);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
