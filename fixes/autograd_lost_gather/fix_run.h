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
// A gradient record is `exact` when |g - g*| <= 1e-10 |g*| for every seed
// (double; g* the one-process gradient of the full-batch objective). A
// training record is `exact` when the parameters after --steps steps are
// within kTrainExactTol (relative) of one-process training on g*.
#pragma once

#include <vector>

#include "core/results/record.h"
#include "repro/autograd_lost_gather/experiments.h"

namespace ddp::autograd_lost_gather {

inline constexpr double kFixGradTol = 1e-10;
inline constexpr double kTrainExactTol = 1e-10;

std::vector<VariantSpec> FixVariants();

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairFlags& p);

}  // namespace ddp::autograd_lost_gather
