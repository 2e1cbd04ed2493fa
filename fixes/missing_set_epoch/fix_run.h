// The set_epoch fix, measured over the same rows as the repro.
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/missing_set_epoch/rows.h"

namespace ddp::missing_set_epoch {

// Largest fraction of identical positions between consecutive epochs that
// still counts as "a different order every epoch". Two independent random
// orders agree at about 1/N of the positions.
inline constexpr double kMaxIdenticalFraction = 0.05;

// One record per world size and dataset size: variant set_epoch, exact when
// every epoch's global list (all-gathered from the ranks) equals the
// one-process order randperm(N, seed + epoch) with its padding, so that
// coverage is 100%, duplicates are exactly the padding, and consecutive
// epochs differ.
std::vector<results::Record> RunFix(const harness::CommonFlags& flags, const PairOptions& options);

}  // namespace ddp::missing_set_epoch
