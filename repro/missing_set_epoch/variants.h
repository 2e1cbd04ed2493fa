// The missing set_epoch repro variants (see variants.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/missing_set_epoch/rows.h"

namespace ddp::missing_set_epoch {

// One record per world size, dataset size and variant: no_set_epoch,
// per_rank_seed, and (at N = --n) no_set_epoch_training.
// per_rank_seed's verdict tolerance on the mean coverage (see variants.cc).
double PerRankTolerance(int64_t n, int world_size, int seeds, int epochs);

std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, const PairOptions& options);

}  // namespace ddp::missing_set_epoch
