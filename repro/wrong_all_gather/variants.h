// The four ways distributed evaluation gets the global AUC wrong (seed 000).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::wrong_all_gather {

// Runs every variant over the rows (rows.h) on real ranks: one record per
// row and variant. raw_unequal runs once per row (first seed) in a world of
// its own, since ranks may abort.
std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, bool sweep);

}  // namespace ddp::wrong_all_gather
