// Spawning the ranks of a small benchmark tool whose rank 0 prints its
// results (JSON lines) on stdout.
#pragma once

#include <chrono>

#include "core/launch/spawn.h"

namespace ddp::bench {

// Runs `fn` on `world_size` spawned ranks, then prints rank 0's stdout; on a
// failure, the run's summary and every failed rank's stderr go to stderr,
// each prefixed with `program`. Returns the tool's exit code (0 or 1).
int SpawnAndPrintRankZero(const char* program, int world_size, const launch::RankFn& fn,
                          std::chrono::seconds deadline);

}  // namespace ddp::bench
