// Running the fixes (fixes.h) over the repro's unequal-step pipelines.
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::drop_last_hang {

// Tolerance on the averaged gradients vs the one-process computation
// (double, normwise: max |a - b| / max |b| over every step).
inline constexpr double kGradTolerance = 1e-12;

// Rows: drop_last on the uneven split (N = W B k + 1); even_batches and join
// on the uneven split and on the filtered pipeline with batch 2. --sweep: W
// in {2, 4, 8}. Exact when every rank ran the same number of collectives
// (checked mode on) and every step's averaged gradient equals the serial
// mean over the contributing ranks to kGradTolerance.
std::vector<results::Record> RunFix(const harness::CommonFlags& flags, bool sweep);

}  // namespace ddp::drop_last_hang
