// The three fixes for ranks with different step counts, each one epoch of
// DDP training on W ranks in checked mode (every collective's fingerprint is
// compared across ranks first, so any step-count mismatch would fail loudly):
//   drop_last     DistributedSampler(drop_last=True) and DataLoader(drop_last
//                 =True) instead of the hand-written split: floor(N/W)
//                 indices, whole batches only
//   even_batches  one allreduce(max) of the local batch count, then every
//                 rank cycles through its own batches again up to that count
//                 (PyTorch's "even sampler" idea, done after filtering)
//   join          every step all ranks allreduce a has-data flag; a rank out
//                 of data shadows the gradient allreduce with zeros, and the
//                 average divides by the number of ranks that contributed
//                 (what torch.distributed.algorithms.Join does for DDP, with
//                 divide_by_initial_world_size=False)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "repro/drop_last_hang/scenario.h"
#include "repro/missing_set_epoch/replica.h"

namespace ddp::drop_last_hang {

enum class Fix { kDropLast, kEvenBatches, kJoin };
const char* Name(Fix f);

// The batches rank `rank` trains on under `fix` (even_batches: after the
// padding, given the global maximum batch count). Empty entries are steps
// where the rank has no data (join only).
Batches FixedBatches(Fix fix, const Config& c, int rank, int64_t max_batches);

struct StepResult {
  Eigen::VectorXd average;  // the averaged gradient every rank applied
  int contributors = 0;     // ranks whose gradient went into it
};

// Trains one epoch on this rank; returns every step's averaged gradient.
std::vector<StepResult> TrainWithFix(comm::Comm& comm, Fix fix, const Config& c);

// The one-process computation: one model, every step the mean of the
// gradients of the contributing ranks' batches (computed serially), then
// the same SGD step. Returns each step's reference average.
std::vector<StepResult> SerialReference(Fix fix, const Config& c);

}  // namespace ddp::drop_last_hang
