// fixes/wrong_all_gather: the two correct gathers (gather.h) checked against
// the one-process AUC and AP over the rows of repro/wrong_all_gather/rows.h.
#include "core/device/device_flag.h"
#include "core/harness/pair_main.h"
#include "fixes/wrong_all_gather/fix_run.h"

int main(int argc, char** argv) {
  bool sweep = false;
  ddp::device::Placement placement = ddp::device::Placement::kAuto;
  ddp::harness::PairSpec spec;
  spec.program = "fix_wrong_all_gather";
  spec.summary =
      "Gathers predictions with lengths exchange + pad + all_gather + trim, or with allgatherv,\n"
      "restores global sample order, drops the sampler's padding repeats, and checks AUC and AP\n"
      "against the one-process values (exact to 1e-12).";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &sweep, "W in {2,4,8}, N in {--n,250W,97,10}, batch in {--batch_size,7,1}");
  };
  spec.shared_flags = {ddp::device::PlacementFlag(
      "gather_device",
      "where each rank pads, trims and reorders the gathered predictions: auto (the GPU under --backend "
      "nccl, else the host), host, emulated (the device path on the host), cuda",
      &placement)};
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::wrong_all_gather::RunFix(f, sweep, placement);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
