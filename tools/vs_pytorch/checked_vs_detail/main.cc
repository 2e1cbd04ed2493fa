// The suite's checked mode on the three mismatches that detail.py runs on
// PyTorch with TORCH_DISTRIBUTED_DEBUG=DETAIL; see scenarios.h and the last
// section of core/comm/README.md.
#include <algorithm>

#include "tools/vs_pytorch/checked_vs_detail/scenarios.h"
#include "core/harness/pair_main.h"

int main(int argc, char** argv) {
  ddp::harness::PairSpec spec;
  spec.program = "checked_vs_detail";
  spec.summary =
      "Runs an unequal all_gather, an allreduce against a barrier, a sum against a max\n"
      "allreduce, and one extra allreduce while the other ranks stay alive, in checked mode (DDP_PITFALLS_CHECK=1), on W in\n"
      "{2, --world_size}; records which error each rank gets and how fast. --timeout is the\n"
      "collective deadline (default 10 s, as detail.py's process-group timeout).";
  spec.defaults.timeout = 10;
  spec.validate = [](const ddp::harness::CommonFlags& f) -> std::string {
    if (f.world_size < 2) return "--world_size must be >= 2 (allowed: 2..64): a mismatch needs two ranks";
    return "";
  };
  spec.run = [](const ddp::harness::CommonFlags& f) {
    std::vector<int> worlds = {2, f.world_size};
    std::sort(worlds.begin(), worlds.end());
    worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
    return ddp::checked_vs_detail::RunScenarios(f, worlds);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
