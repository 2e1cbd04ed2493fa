// The (sum, count) fix (see sum_count.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::mean_of_means {

// Runs every row (see sweep.h) on real ranks and returns one record per row.
// lightning: also the W = 16 Lightning split where this run can make it.
std::vector<results::Record> RunFix(const harness::CommonFlags& flags, bool sweep,
                                    bool lightning = true);

}  // namespace ddp::mean_of_means
