// The pair's gradient check, run through the real engine, one process per
// rank (harness::RunWorld), for any list of gather variants: one DDP step
// (objective.h) per seed, loss, per-rank batch layout (Layout) and variant;
// rank 0 compares the averaged parameter gradient g with the one-process
// gradient g* of the full-batch objective, and with the one-process
// prediction of the variant's mechanism (SerialGrad with the variant's
// KeyPaths).
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

// Rank 0's measurements of one configuration (a rank result: the world's
// value lists them in run order). Over the seeds (worst case), all relative
// to |g*| (L2 norms of the flat parameter gradient):
struct GradStats {
  double rel_error = 0;            // max |g - g*| / |g*|
  double scaled_error = 0;         // max |W g - g*| / |g*|
  double best_scale_residual = 0;  // max min_c |c g - g*| / |g*| (c = g.g*/|g|^2)
  double min_cosine = 0;           // min cos(g, g*)
  double closed_form_gap = 0;      // max |g - g_predicted| / |g*|
  double max_abs_grad = 0;         // max |g_k| over entries and seeds
  double norm_ratio = 0;           // |g| / |g*| (first seed)
  double true_grad_norm = 0;       // |g*| (first seed)
  double objective = 0;            // full-batch objective (first seed)
  // Rank 0's host<->device copies in the first seed's step (copy_json.h);
  // null on the host. Every rank copies the same sizes in this pair.
  results::Json device_copies;
};
DDP_JSON_FIELDS(GradStats, rel_error, scaled_error, best_scale_residual, min_cosine,
                closed_form_gap, max_abs_grad, norm_ratio, true_grad_norm, objective, device_copies)

// One gradient check: its configuration, and what rank 0 measured (the
// GradStats it is).
struct GradCheck : GradStats {
  std::string variant;
  LossKind loss = LossKind::kGlobal;
  int world_size = 0;
  Layout layout = Layout::kEven;
  std::vector<int64_t> counts;
  int seeds = 0;
  uint64_t first_seed = 0;
  bool scale_by_world = false;
  std::string device;  // the resolved --device: host, emulated or cuda
  std::string error;  // the world failed (the measurements are then unset)
};

std::vector<GradCheck> RunGradChecks(const harness::CommonFlags& f, const PairFlags& p,
                                     const std::vector<VariantSpec>& variants);

// The record without kind/verdict (each side judges): bug, variant, backend,
// world_size, config, measured, reference; verdict kError with the message
// when the world failed.
results::Record GradRecord(const GradCheck& c, const harness::CommonFlags& f);

}  // namespace ddp::autograd_lost_gather
