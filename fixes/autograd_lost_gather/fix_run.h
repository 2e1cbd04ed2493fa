// The fix's variants and their verdicts.
//
//   differentiable            DifferentiableGather, reduce_scatter adjoint
//                             (padded for unequal counts), both losses
//   differentiable_allreduce  DifferentiableGather, all-reduce adjoint, both
//   local_reinsert_xW         the seed's fix with each rank's loss multiplied
//                             by W, on the global loss only: exact there,
//                             because every rank's loss is the same function
//                             (objective.h derives it)
//
// A gradient record is `exact` when |g - g*| <= 1e-12 |g*| for every seed
// (double; g* the one-process gradient of the full-batch objective). A
// training record is `exact` when every step agrees with the one-process
// true-gradient step from the same parameters and momentum (exact::StepCheck,
// 1e-12 relative: averaged gradient, parameters, momentum); its distance to
// free-running one-process training is recorded as trajectory_rel_err only.
#pragma once

#include <string>
#include <vector>

#include "core/exact/step_check.h"
#include "core/results/record.h"
#include "repro/autograd_lost_gather/pair_config.h"

namespace ddp::autograd_lost_gather {

inline constexpr double kFixGradTol = exact::kDoubleTolerance;

std::vector<VariantSpec> FixVariants();

// What the fix runs beyond the repro: --sweep covers W in {1, 2, 3, 4, 5, 8}
// (curves at --steps on W in {2, 4, 8}), an empty-rank layout besides even
// and uneven, and the training grid W x per-rank batch {1, 2, 3, 8} x
// layout (grid_steps steps each).
PairFlags FixPairFlags(PairFlags p);
// W >= 1 (one rank is the trivially exact case), W x --batch_size >= 2
// (the global loss needs both classes), --n >= 2.
std::string ValidateFix(const harness::CommonFlags& f, const PairFlags& p);

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairFlags& p);

}  // namespace ddp::autograd_lost_gather
