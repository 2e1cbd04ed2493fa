// The small-batch BatchNorm repro variants (see variants.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/training.h"

namespace ddp::small_batch_bn {

// Pair-specific settings (flags of both binaries).
struct PairOptions {
  bool sweep = false;  // per-rank batch {2,4,8,16,32} x W {1,2,4,8}
  int epochs = 6;
  int precise_batches = 32;
  double lr = 0.05;
};

// Runs `cfg` on W spawned ranks (or the launcher's) for each seed of `f`;
// returns rank 0's results, or throws std::runtime_error with the failure.
std::vector<TrainResult> RunDdp(const harness::CommonFlags& f, TrainConfig cfg);
// The one-process reference replaying the same global batches, per seed.
std::vector<TrainResult> RunReference(const harness::CommonFlags& f, TrainConfig cfg);

// Means over seeds of the measurements (accuracy, spreads, errors).
results::Json Aggregate(const std::vector<TrainResult>& runs);

TrainConfig BaseConfig(const harness::CommonFlags& f, const PairOptions& o);

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairOptions& o);

}  // namespace ddp::small_batch_bn
