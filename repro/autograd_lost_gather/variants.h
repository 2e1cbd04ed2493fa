// The repro's variants and their verdicts.
//
//   detached           the gathered tensors are constants (both losses)
//   local_reinsert     the seed's fix: own slot re-inserted (both losses)
//   local_reinsert_xW  the seed's fix with the loss multiplied by W, on the
//                      per-rank loss: the scaling that makes it exact for the
//                      global loss does not remove its bias here
//
// A gradient record is `reproduced` when the engine's averaged gradient g
// equals the one-process prediction of the mechanism (closed_form_gap <=
// 1e-10 relative to |g*|) AND the symptom has its expected size:
//   detached, global:     g == 0 exactly (every score is a constant)
//   local_reinsert, global: g == g*/W (|W g - g*| <= 1e-10 |g*|)
//   per-rank loss, any:   g is not a multiple of g*: even the best rescaling
//                         leaves >= kMinBias of |g*| (best_scale_residual)
// A training record is `reproduced` when every step's averaged gradient
// equals the one-process prediction of the mechanism from the same
// parameters (closed_form_gap <= 1e-10, judged per step) and the training
// ends >= kMinTrainDeviation away from free-running true-gradient training
// (detached, global: the parameters never move, param_change == 0).
#pragma once

#include <vector>

#include "core/results/record.h"
#include "repro/autograd_lost_gather/pair_config.h"

namespace ddp::autograd_lost_gather {

inline constexpr double kGradTol = 1e-10;
inline constexpr double kMinBias = 0.05;
inline constexpr double kMinTrainDeviation = 1e-2;

std::vector<VariantSpec> ReproVariants();

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairFlags& p);

}  // namespace ddp::autograd_lost_gather
