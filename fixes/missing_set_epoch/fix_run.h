// The set_epoch fix, measured over the same rows as the repro, and trained.
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/missing_set_epoch/rows.h"

namespace ddp::missing_set_epoch {

// Largest fraction of identical positions between consecutive epochs that
// still counts as "a different order every epoch". Two independent random
// orders agree at about 1/N of the positions.
inline constexpr double kMaxIdenticalFraction = 0.05;

// What the fix runs: world sizes and, for the training rows, per-rank batch
// sizes. Without --sweep: W in {2, --world_size}, batch --batch_size. With
// --sweep: W in {1, 2, 3, 4, 5, 8, --world_size}, batch in {1, 2, 3, 8,
// --batch_size}; the dataset sizes of the order rows are the repro's.
struct FixGrid {
  std::vector<int> world_sizes;
  std::vector<int> batch_sizes;
};
FixGrid Grid(const harness::CommonFlags& f, const PairOptions& o);

// Per world size, one world:
//  * order rows (experiment "order"), one per dataset size: exact when
//    every epoch's global list (all-gathered from the ranks) equals the
//    one-process order randperm(N, seed + epoch) with its padding, so that
//    coverage is 100%, duplicates are exactly the padding, and consecutive
//    epochs differ;
//  * training rows (experiment "training"), one per batch size: --epochs
//    epochs of DDP training with set_epoch (the repro's training loop), each
//    step judged against the one-process step from the same state
//    (training_check.h): exact when every rank's every step agrees to 1e-12
//    relative (averaged gradient, parameters, momentum, running statistics)
//    and every rank ran the one-process number of steps.
std::vector<results::Record> RunFix(const harness::CommonFlags& flags, const PairOptions& options,
                                    const FixGrid& grid);

}  // namespace ddp::missing_set_epoch
