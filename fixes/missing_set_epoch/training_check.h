// Training with the fix, judged per step: DDP with set_epoch must take, at
// every step, the step one process takes on the same data from the same
// state.
//
// The one-process computation: one model; epoch e's order is the one-process
// order randperm(N, seed + e) with the sampler's padding (OneProcessOrder),
// each step the mean of the W micro-batch gradients that the sampler's
// layout cuts from it (rank r's share is positions r, r + W, ...), then
// SGD. Micro-batches rather than one global batch, because the model has
// local BatchNorm: each rank normalises with its own batch's statistics,
// which is what DDP computes and what the fix must not change.
#pragma once

#include <cstdint>
#include <vector>

#include "Eigen/Core"
#include "core/comm/comm.h"
#include "core/exact/step_check.h"
#include "repro/missing_set_epoch/training.h"

namespace ddp::missing_set_epoch {

// BatchNorm refuses a batch of one sample: GroupNorm where the loader would
// yield one (batch 1, or a tail of one), local BatchNorm otherwise.
replica::Norm NormFor(int64_t n, int world_size, int batch_size);

// The index lists of step `step`, one per rank, cut from an epoch's
// one-process order (OneProcessOrder; empty past a rank's last batch).
std::vector<std::vector<int64_t>> OneProcessStep(const TrainConfig& c,
                                                 const std::vector<int64_t>& order, int64_t step);
// Steps per epoch: ceil(ceil(N/W) / B).
int64_t StepsPerEpoch(const TrainConfig& c);

struct TrainingCheck {
  // Every step of this rank: its averaged gradient and its state after the
  // step (parameters, momentum, running statistics) vs the one-process step
  // from the state this rank held before it (teacher forcing: the reference
  // adopts the rank's state, so no rounding accumulates and no collective is
  // added to the training loop).
  exact::StepCheck check{exact::kDoubleTolerance};
  int64_t steps = 0;
  Eigen::VectorXd final_params;
  results::Json device_copies;  // this rank's in step 0 (Curves::device_copies)
};
// `mode` is kSetEpoch for the fix; the others show that the check fails
// when the ranks train on other data than the one-process order.
TrainingCheck TrainAndCheck(comm::Comm& comm, const TrainConfig& c, Mode mode = Mode::kSetEpoch);

// The same training in one process, free-running: the record's
// trajectory_rel_err (information only) is its distance to rank 0's final
// parameters.
Eigen::VectorXd OneProcessTraining(const TrainConfig& c);

}  // namespace ddp::missing_set_epoch
