// The drop_last hang repro variants (see variants.cc).
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::drop_last_hang {

// NCCL only: added to the no-deadline row's world deadline for start-up
// (the default of PairOptions::nccl_startup_s).
inline constexpr double kNcclStartupS = 60.0;

struct PairOptions {
  // World deadline of the no-deadline row (the launcher's timeout).
  double hang_world_deadline_s = 5;
  bool sweep = false;
  // NCCL only: what the no-deadline row's world deadline adds for start-up.
  double nccl_startup_s = kNcclStartupS;
  // The control rows (ranks predicted to run equal steps), and the
  // filtered_batches row of batch 2 (its deadline error comes at allreduce
  // #120). With both off, the uneven split's three rows are left (deadline,
  // no deadline, early exit): a short run for where each world costs
  // seconds (NCCL ranks sharing a GPU: core/testing/README.md).
  bool controls = true;
  bool filtered_deadline_row = true;
  // --device (core/device/device_flag.h): where the gradient allreduce runs.
  std::string device = "auto";
};

// The allowed lateness of the deadline error: it must arrive within the
// collective deadline plus this.
inline constexpr double kDetectSlackS = 2.0;

// One record per row: sampler_padding, uneven_shards (N = --n and N = W B k
// + 1), filtered_batches (batch --batch_size and 2), and, on the uneven
// split, the raw hang with no collective deadline (uneven_shards_no_deadline)
// and early ranks that exit (uneven_shards_early_exit). Rows whose ranks
// are predicted to run equal steps are controls.
std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, const PairOptions& options);

}  // namespace ddp::drop_last_hang
