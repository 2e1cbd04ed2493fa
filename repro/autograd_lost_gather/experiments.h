// The two experiments of the pair, run through the real engine, one process
// per rank (harness::RunWorld), for any list of gather variants:
//
//  * gradient check: one DDP step (objective.h) per seed, loss, per-rank
//    batch layout (Layout) and variant; rank 0 compares the averaged
//    parameter gradient g with the one-process gradient g* of the full-batch
//    objective, and with the one-process prediction of the variant's
//    mechanism (SerialGrad with the variant's KeyPaths).
//  * training: SGD steps (momentum 0.9) on fresh batches of the layout's
//    rows per step, judged per step (teacher forcing): before every step
//    rank 0 hands its parameters and momentum to a one-process model, which
//    takes the true-gradient step (g*, then SGD) and the predicted step of
//    the variant's mechanism from that same state; the engine's averaged
//    gradient and rank 0's parameters and momentum after the step are
//    compared with them (exact::StepCheck). Rounding of one step cannot grow
//    over the next, so the verdict judges the gather, not how chaotic the
//    training is. Rank 0 judges for all: every rank applies the same
//    all-reduced gradient. The free-running one-process run on g* is kept
//    for the held-out curves and the final distance (trajectory_rel_err,
//    information only).
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

// How a step's rows are spread over the ranks (B = --batch_size):
//   even        B rows on every rank
//   uneven      rank r holds 1 + floor(B r / W) rows (rank 0 a single row)
//   empty_rank  B rows on ranks 0 .. W-2, none on the last rank
enum class Layout { kEven, kUneven, kEmptyRank };
const char* Name(Layout layout);
std::vector<int64_t> Counts(Layout layout, int world_size, int batch_size);
// A layout runs when it is what its name says (uneven: the counts differ;
// empty_rank: W >= 2) and the batch has at least 2 rows (the global loss
// needs both classes).
bool LayoutRuns(Layout layout, int world_size, int batch_size);

// One world size and per-rank batch size of the training grid.
struct GridCell {
  int world_size = 0;
  int batch_size = 0;
};

// The flags of the pair beyond PairMain's common ones, and what each binary
// sets for itself.
struct PairFlags {
  bool sweep = false;  // W in sweep_worlds instead of --world_size
  int steps = 300;     // training steps; 0 skips the training with curves
  double lr = 0.05;
  ProblemOptions problem;
  std::vector<int> sweep_worlds = {2, 4, 8};
  // Where the training with held-out curves runs under --sweep (empty: the
  // sweep's world sizes).
  std::vector<int> curve_worlds;
  // The gradient checks' layouts; the training grid's too.
  std::vector<Layout> layouts = {Layout::kEven, Layout::kUneven};
  // Training grid (--sweep, the fix): every cell x layout, grid_steps steps
  // each, judged per step like the training with curves.
  std::vector<GridCell> grid;
  int grid_steps = 20;
};

std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairFlags& p);
std::vector<int64_t> EvenCounts(int world_size, int batch_size);
std::vector<int64_t> UnevenCounts(int world_size, int batch_size);

struct GradCheck {
  std::string variant;
  LossKind loss = LossKind::kGlobal;
  int world_size = 0;
  Layout layout = Layout::kEven;
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
  int batch_size = 0;
  Layout layout = Layout::kEven;
  std::vector<int64_t> counts;
  int steps = 0;
  bool grid = false;                  // a grid row (no held-out curves)
  std::vector<CurvePoint> curve;      // the engine run (rank 0's model)
  std::vector<CurvePoint> reference;  // one process, true gradient, free-running
  results::Json step_check;    // per step vs the true-gradient step (exact::StepCheck)
  double grad_rel_err = 0;     // its worst gradient error
  double closed_form_gap = 0;  // worst per-step gradient error vs the predicted mechanism
  double deviation = 0;        // trajectory_rel_err: |theta - theta*| / |theta*|, free-running
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
void AddPairFlags(cli::Flags& flags, PairFlags* p,
                  const char* sweep_help = "run W in {2,4,8} instead of --world_size");
std::string ValidatePair(const harness::CommonFlags& f, const PairFlags& p);

// The product W x per-rank batch of the training grid.
std::vector<GridCell> GridOf(const std::vector<int>& worlds, const std::vector<int>& batches);

}  // namespace ddp::autograd_lost_gather
