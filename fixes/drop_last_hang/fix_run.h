// Running the fixes (fixes.h) over the repro's unequal-step pipelines.
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::drop_last_hang {

// One world size with the per-rank batch sizes it runs.
struct Cell {
  int world_size = 4;
  int batch_size = 32;           // uneven_shards (and the empty rank)
  int filtered_batch_size = 2;   // filtered_batches (seed 001's batch size)
};

// Without --sweep: W = --world_size, B = --batch_size, filtered batch 2.
// --sweep: W in {1, 2, 3, 4, 5, 8} x B in {1, 2, 3, 8} (the filter with the
// same B).
std::vector<Cell> Cells(const harness::CommonFlags& f, bool sweep);

// Rows of a cell (one world per cell, the rows run one after another):
//   drop_last                 uneven_shards, N = W B k + 1 (rank 0 one step more)
//   even_batches, join,
//   join_initial_world_size   the same uneven split, and filtered_batches
//   join, join_initial_world_size
//                             an empty rank (W >= 2): N = W - 1, the last
//                             rank has no sample at all (even_batches cannot
//                             run there: it has nothing to repeat)
// A row is `exact` when every rank ran the same collectives (checked mode),
// as many steps as the one-process run, and every step's outputs equal the
// one-process step from the same state (exact::StepCheck, 1e-12 relative):
// the averaged gradient, the parameters and momentum after the step, and
// the contributor count. join_initial_world_size expects `inexact` when some
// step has fewer contributors c than W (its worst gradient error is then
// 1 - c_min/W, recorded as reference.expected_grad_rel_err) and `exact`
// otherwise. The free-running one-process epoch's distance to rank 0's
// final parameters is measured.trajectory_rel_err (information only).
// `device` (--device: auto, host, emulated, cuda): where the gradient
// allreduce runs; every record has config.device, and on a device
// measured.device_copies holds rank 0's copies over the row's epoch.
std::vector<results::Record> RunFix(const harness::CommonFlags& flags,
                                    const std::vector<Cell>& cells,
                                    const std::string& device = "auto");

}  // namespace ddp::drop_last_hang
