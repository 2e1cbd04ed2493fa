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

// What the ranks iterated over all epochs of a range of seeds: coverage,
// duplicates and sameness of the global lists (a rank result; the keys of its
// JSON are the member names).
struct OrderStats {
  int epochs = 0;  // epochs measured (over all seeds)
  double coverage_mean = 0, coverage_min = 1, coverage_max = 0;
  double duplicates_mean = 0;
  int64_t duplicates_max = 0;
  double missed_mean = 0;
  // Consecutive epochs of one seed: fraction of identical global positions.
  double identical_min = 1, identical_max = 0;
  int epoch_pairs = 0;  // consecutive epoch pairs compared
  // Epochs whose global list equals the one-process order of that epoch
  // (randperm seeded seed + epoch, padded).
  int matches_one_process = 0;
  // Epochs whose global list equals epoch 0's (same seed).
  int same_as_epoch0 = 0;
};
DDP_JSON_FIELDS(OrderStats, epochs, coverage_mean, coverage_min, coverage_max, duplicates_mean,
                duplicates_max, missed_mean, identical_min, identical_max, epoch_pairs,
                matches_one_process, same_as_epoch0)

// Every rank calls this for seeds first_seed .. first_seed + seeds - 1
// (one Allgather per epoch); every rank returns the same stats.
OrderStats MeasureOrders(comm::Comm& comm, Mode mode, OrderConfig config, int64_t first_seed,
                         int seeds);

}  // namespace ddp::missing_set_epoch
