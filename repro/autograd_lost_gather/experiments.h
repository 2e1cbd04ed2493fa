// The two experiments of the pair, run through the real engine, one process
// per rank (harness::RunWorld), for any list of gather variants:
//
//  * gradient check: one DDP step (objective.h) per seed, loss, per-rank
//    batch layout (even: every rank holds --batch_size rows; uneven: rank r
//    holds 1 + floor(batch_size * r / W) rows) and variant; rank 0 compares
//    the averaged parameter gradient g with the one-process gradient g* of
//    the full-batch objective, and with the one-process prediction of the
//    variant's mechanism (SerialGrad with the variant's KeyPaths).
//  * training: --steps SGD steps (momentum 0.9) on fresh even batches of
//    W x --batch_size rows per step, checkpoints evaluated on --n held-out
//    rows; compared with one-process training on the true gradient of the
//    same batches, and with one-process training on the predicted gradient.
//
// Both repro (buggy gathers) and fix (differentiable gather) use these; each
// turns the results into records with its own verdicts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/harness/pair_main.h"
#include "core/results/record.h"
#include "repro/autograd_lost_gather/gather_op.h"
#include "repro/autograd_lost_gather/objective.h"

namespace ddp::autograd_lost_gather {

struct VariantSpec {
  std::string name;
  std::function<std::unique_ptr<GatherOp>()> make_op;
  KeyPaths paths = KeyPaths::kAll;  // what the op lets through (the prediction)
  bool scale_by_world = false;      // each rank's loss multiplied by W
  std::vector<LossKind> losses;     // the losses this variant runs on
};

// The flags of the pair beyond PairMain's common ones.
struct PairFlags {
  bool sweep = false;  // W in {2, 4, 8} instead of --world_size
  int steps = 300;     // training steps; 0 skips training
  double lr = 0.05;
  ProblemOptions problem;
};

std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairFlags& p);
std::vector<int64_t> EvenCounts(int world_size, int batch_size);
std::vector<int64_t> UnevenCounts(int world_size, int batch_size);

struct GradCheck {
  std::string variant;
  LossKind loss = LossKind::kGlobal;
  int world_size = 0;
  bool uneven = false;
  std::vector<int64_t> counts;
  int seeds = 0;
  uint64_t first_seed = 0;
  bool scale_by_world = false;
  // Over the seeds (worst case), all relative to |g*| (L2 norms of the flat
  // parameter gradient):
  double rel_error = 0;            // max |g - g*| / |g*|
  double scaled_error = 0;         // max |W g - g*| / |g*|
  double best_scale_residual = 0;  // max min_c |c g - g*| / |g*| (c = g.g*/|g|^2)
  double min_cosine = 0;           // min cos(g, g*)
  double closed_form_gap = 0;      // max |g - g_predicted| / |g*|
  double max_abs_grad = 0;         // max |g_k| over entries and seeds
  double norm_ratio = 0;           // |g| / |g*| (first seed)
  double true_grad_norm = 0;       // |g*| (first seed)
  double objective = 0;            // full-batch objective (first seed)
  std::string error;               // the world failed
};

std::vector<GradCheck> RunGradChecks(const harness::CommonFlags& f, const PairFlags& p,
                                     const std::vector<VariantSpec>& variants);

struct CurvePoint {
  int step = 0;
  double loss = 0;
  double accuracy = 0;
};

struct TrainRun {
  std::string variant;
  LossKind loss = LossKind::kGlobal;
  int world_size = 0;
  std::vector<CurvePoint> curve;      // the engine run (rank 0's model)
  std::vector<CurvePoint> reference;  // one process, true gradient
  double deviation = 0;        // |theta - theta*| / |theta*| after the last step
  double closed_form_gap = 0;  // |theta - theta_predicted| / |theta*|
  double param_change = 0;     // |theta_end - theta_0| / |theta_0|
  std::string error;
};

std::vector<TrainRun> RunTraining(const harness::CommonFlags& f, const PairFlags& p,
                                  const std::vector<VariantSpec>& variants);

// The steps evaluated during training: 0, 10, 25, 50, 100, 200, 300, 400,
// ... up to `steps`, and `steps`.
std::vector<int> Checkpoints(int steps);

// Records without kind/verdict (each side judges): bug, variant, backend,
// world_size, config, measured, reference; verdict kError with the message
// when the world failed.
results::Record GradRecord(const GradCheck& c, const harness::CommonFlags& f);
results::Record TrainRecord(const TrainRun& t, const harness::CommonFlags& f, const PairFlags& p);

// Registers --sweep, --steps, --lr; validates (world_size >= 2, batch_size
// >= 2 so that the uneven layout is uneven, n >= 2). Returns "" or the message.
void AddPairFlags(cli::Flags& flags, PairFlags* p);
std::string ValidatePair(const harness::CommonFlags& f, const PairFlags& p);

}  // namespace ddp::autograd_lost_gather
