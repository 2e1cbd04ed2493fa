// A pair's record for a world that failed: what every repro and fix does
// when RunWorld's world is not ok, once.
//
//   results::Record rec = ...;  // bug, variant, config: what the row is
//   if (harness::KeptAsError(world, rec, records)) continue;
//   ... judge world.value into rec ...
#pragma once

#include <vector>

#include "core/harness/world.h"
#include "core/results/record.h"

namespace ddp::harness {

// When the world failed (!world.ok): appends `rec` to `records` with verdict
// kError and error world.failure, and returns true. Otherwise returns false
// and appends nothing.
bool KeptAsError(const WorldResult& world, const results::Record& rec,
                 std::vector<results::Record>& records);

}  // namespace ddp::harness
