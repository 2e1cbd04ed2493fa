// fixes/mean_of_means: all-reduce (sum, count), not averages.
// Runs the (sum, count) fix of fix_run.cc over the rows of sweep.h; see README.md.
#include <string>

#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/mean_of_means/fix_run.h"

int main(int argc, char** argv) {
  bool sweep = false;
  bool no_lightning = false;
  std::string device = "auto";
  ddp::harness::PairSpec spec;
  spec.program = "fix_mean_of_means";
  spec.summary =
      "All-reduces (sum, count) over the samples each rank really owns and checks the result\n"
      "against the one-process accuracy and loss (exact to 1e-12).";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &sweep, "W in {2,4,8}, N in {--n,1024,97}, batch in {--batch_size,7,1}");
    flags.Bool("no_lightning", &no_lightning,
               "skip the W = 16 world of Lightning issues 21838/21859 (16 ranks: oversubscribed on\n"
                "small machines; what a test of the other rows does not need)");
    ddp::device::AddDeviceFlag(flags, &device);
  };
  spec.validate = [&](const ddp::harness::CommonFlags& f) { return ddp::device::DeviceFlagError(device, f.backend); };
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::mean_of_means::RunFix(f, sweep, !no_lightning, device);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
