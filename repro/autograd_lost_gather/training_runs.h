// The pair's training, run through the real engine, one process per rank
// (harness::RunWorld), for any list of gather variants: SGD steps (momentum
// 0.9) on fresh batches of the layout's rows per step, judged per step
// (teacher forcing): before every step rank 0 hands its parameters and
// momentum to a one-process model, which takes the true-gradient step (g*,
// then SGD) and the predicted step of the variant's mechanism from that same
// state; the engine's averaged gradient and rank 0's parameters and momentum
// after the step are compared with them (exact::StepCheck). Rounding of one
// step cannot grow over the next, so the verdict judges the gather, not how
// chaotic the training is. Rank 0 judges for all: every rank applies the
// same all-reduced gradient. The free-running one-process run on g* is kept
// for the held-out curves and the final distance (trajectory_rel_err,
// information only).
//
// Both repro (buggy gathers) and fix (differentiable gather) use it; each
// turns the results into records with its own verdicts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/harness/pair_main.h"
#include "core/results/record.h"
#include "repro/autograd_lost_gather/objective.h"
#include "repro/autograd_lost_gather/pair_config.h"

namespace ddp::autograd_lost_gather {

// One point of a held-out curve.
struct CurvePoint {
  int step = 0;
  double loss = 0;
  double accuracy = 0;
};
DDP_JSON_FIELDS(CurvePoint, step, loss, accuracy)

// What rank 0 measures in one training run (a rank result: the world's
// value lists them in run order).
struct TrainResult {
  std::vector<CurvePoint> curve;      // the engine run (rank 0's model)
  std::vector<CurvePoint> reference;  // one process, true gradient, free-running
  results::Json step_check;    // per step vs the true-gradient step (exact::StepCheck)
  double closed_form_gap = 0;  // worst per-step gradient error vs the predicted mechanism
  double deviation = 0;        // trajectory_rel_err: |theta - theta*| / |theta*|, free-running
  double param_change = 0;     // |theta_end - theta_0| / |theta_0|
  // Rank 0's host<->device copies in step 0 (copy_json.h); null on the host.
  results::Json device_copies;
};
DDP_JSON_FIELDS(TrainResult, curve, reference, step_check, closed_form_gap, deviation,
                param_change, device_copies)

// One training run: its configuration, and what rank 0 measured (the
// TrainResult it is).
struct TrainRun : TrainResult {
  std::string variant;
  LossKind loss = LossKind::kGlobal;
  int world_size = 0;
  int batch_size = 0;
  Layout layout = Layout::kEven;
  std::vector<int64_t> counts;
  int steps = 0;
  bool grid = false;        // a grid row (no held-out curves)
  double grad_rel_err = 0;  // step_check's worst gradient error
  std::string error;        // the world failed (the measurements are then unset)
};

std::vector<TrainRun> RunTraining(const harness::CommonFlags& f, const PairFlags& p,
                                  const std::vector<VariantSpec>& variants);

// The steps evaluated during training: 0, 10, 25, 50, 100, 200, 300, 400,
// ... up to `steps`, and `steps`.
std::vector<int> Checkpoints(int steps);

// The record without kind/verdict (each side judges): bug, variant, backend,
// world_size, config, measured, reference; verdict kError with the message
// when the world failed.
results::Record TrainRecord(const TrainRun& t, const harness::CommonFlags& f, const PairFlags& p);

}  // namespace ddp::autograd_lost_gather
