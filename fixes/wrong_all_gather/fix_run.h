// Running the two gather fixes over rows of configurations.
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/wrong_all_gather/rows.h"

namespace ddp::wrong_all_gather {

// One record per row, sharding (padded_sampler, strided) and method; exact
// when AUC and AP equal the one-process values to 1e-12 for every seed (or
// both are undefined, with the same message).
std::vector<results::Record> RunFixOnRows(const harness::CommonFlags& flags,
                                          const std::vector<Row>& rows);

std::vector<results::Record> RunFix(const harness::CommonFlags& flags, bool sweep);

}  // namespace ddp::wrong_all_gather
