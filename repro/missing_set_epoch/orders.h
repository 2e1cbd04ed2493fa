// Measuring what the ranks iterate, through the engine: every epoch each
// rank all-gathers its index list, and the global list (interleaved as the
// DistributedSampler lays it out) is scored for coverage, duplicates, and
// sameness with the previous epoch and with the one-process order.
#pragma once

#include <cstdint>
#include <vector>

#include "core/comm/comm.h"
#include "core/results/json.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {

struct OrderStats {
  int epochs = 0;  // epochs measured (over all seeds)
  double coverage_mean = 0, coverage_min = 1, coverage_max = 0;
  double duplicates_mean = 0, missed_mean = 0;
  int64_t duplicates_max = 0;
  // Consecutive epochs of one seed: fraction of identical global positions.
  double identical_min = 1, identical_max = 0;
  int pairs = 0;
  // Epochs whose global list equals the one-process order of that epoch
  // (randperm seeded seed + epoch, padded).
  int matches_one_process = 0;
  // Epochs whose global list equals epoch 0's (same seed).
  int same_as_epoch0 = 0;

  results::Json ToJson() const;
};

// Every rank calls this for seeds first_seed .. first_seed + seeds - 1
// (one Allgather per epoch); every rank returns the same stats.
OrderStats MeasureOrders(comm::Comm& comm, Mode mode, OrderConfig config, int64_t first_seed,
                         int seeds);

}  // namespace ddp::missing_set_epoch
