// The (sum, count) fix (see fix_run.cc).
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::mean_of_means {

// Runs every row (see sweep.h) on real ranks and returns one record per row.
// lightning: also the W = 16 Lightning split where this run can make it.
// device: --device (core/device/device_flag.h), where the (sum, count)
// all-reduce runs; records carry config.device and, on a device,
// measured.device_copies (rank 0, the first seed's evaluation).
std::vector<results::Record> RunFix(const harness::CommonFlags& flags, bool sweep,
                                    bool lightning = true, const std::string& device = "auto");

}  // namespace ddp::mean_of_means
