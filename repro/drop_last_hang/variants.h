// The drop_last hang repro variants (see variants.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::drop_last_hang {

struct PairOptions {
  // World deadline of the no-deadline row (the launcher's timeout).
  double hang_world_deadline_s = 5;
  bool sweep = false;
};

// The allowed lateness of the deadline error: it must arrive within the
// collective deadline plus this.
inline constexpr double kDetectSlackS = 2.0;

// NCCL only: added to the no-deadline row's world deadline for start-up.
inline constexpr double kNcclStartupS = 60.0;

// One record per row: sampler_padding, uneven_shards (N = --n and N = W B k
// + 1), filtered_batches (batch --batch_size and 2), and, on the uneven
// split, the raw hang with no collective deadline (uneven_shards_no_deadline)
// and early ranks that exit (uneven_shards_early_exit). Rows whose ranks
// are predicted to run equal steps are controls.
std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, const PairOptions& options);

}  // namespace ddp::drop_last_hang
