// The mean-of-means repro variants (see variants.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::mean_of_means {

// Runs every row (see sweep.h) on real ranks and returns one record per row and variant.
std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, bool sweep);

}  // namespace ddp::mean_of_means
