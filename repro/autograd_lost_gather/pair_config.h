// What both experiments of the pair (gradient_checks.h, training_runs.h)
// run on: the gather variants, how a step's rows are spread over the ranks,
// the pair's flags and the training grid. Both repro (buggy gathers) and fix
// (differentiable gather) fill these in.
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

// The losses both experiments run, in this order.
inline constexpr LossKind kLosses[] = {LossKind::kGlobal, LossKind::kPerRank};

// Each rank's loss factor of variant `v` in a world of `w` ranks (W or 1).
double Scale(const VariantSpec& v, int w);
// Whether `v` runs on `loss`.
bool Runs(const VariantSpec& v, LossKind loss);

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
  // --device (core/device/device_flag.h): where the gradient all-reduce and
  // the differentiable gather's all-reduce adjoint run.
  std::string device = "auto";
};

std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairFlags& p);
std::vector<int64_t> EvenCounts(int world_size, int batch_size);
std::vector<int64_t> UnevenCounts(int world_size, int batch_size);

// A batch layout's per-rank row counts as a record's config value.
results::Json CountsJson(const std::vector<int64_t>& counts);

// Registers --sweep, --steps, --lr (--device is a shared flag the binaries
// add: device::DeviceFlag); validates (world_size >= 2, batch_size >= 2 so
// that the uneven layout is uneven, n >= 2). Returns "" or the message.
void AddPairFlags(cli::Flags& flags, PairFlags* p,
                  const char* sweep_help = "run W in {2,4,8} instead of --world_size");
std::string ValidatePair(const harness::CommonFlags& f, const PairFlags& p);

// The product W x per-rank batch of the training grid.
std::vector<GridCell> GridOf(const std::vector<int>& worlds, const std::vector<int>& batches);

}  // namespace ddp::autograd_lost_gather
