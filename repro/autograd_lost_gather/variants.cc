#include "repro/autograd_lost_gather/variants.h"

#include <cmath>
#include <memory>

#include "repro/autograd_lost_gather/buggy_gathers.h"
#include "repro/autograd_lost_gather/gradient_checks.h"
#include "repro/autograd_lost_gather/training_runs.h"

namespace ddp::autograd_lost_gather {
namespace {

using results::Verdict;

bool GradSymptom(const GradCheck& c) {
  if (!(c.closed_form_gap <= kGradTol)) return false;
  if (c.loss == LossKind::kPerRank) return c.best_scale_residual >= kMinBias;
  if (c.variant == "detached") return c.max_abs_grad == 0;
  if (c.variant == "local_reinsert") {
    return std::fabs(c.norm_ratio - 1.0 / c.world_size) <= kGradTol && c.scaled_error <= kGradTol;
  }
  return false;
}

bool TrainSymptom(const TrainRun& t) {
  if (!(t.closed_form_gap <= kGradTol)) return false;
  if (t.loss == LossKind::kGlobal && t.variant == "detached") return t.param_change == 0;
  return t.deviation >= kMinTrainDeviation;
}

}  // namespace

std::vector<VariantSpec> ReproVariants() {
  const std::vector<LossKind> both = {LossKind::kGlobal, LossKind::kPerRank};
  return {
      {"detached", [] { return std::make_unique<DetachedGather>(); }, KeyPaths::kNone, false, both},
      {"local_reinsert", [] { return std::make_unique<LocalReinsertGather>(); }, KeyPaths::kOwnRank,
       false, both},
      {"local_reinsert_xW", [] { return std::make_unique<LocalReinsertGather>(); },
       KeyPaths::kOwnRank, true, {LossKind::kPerRank}},
  };
}

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairFlags& p) {
  const auto variants = ReproVariants();
  std::vector<results::Record> records;
  for (const GradCheck& c : RunGradChecks(f, p, variants)) {
    results::Record r = GradRecord(c, f);
    r.kind = results::Kind::kRepro;
    if (c.error.empty()) r.verdict = GradSymptom(c) ? Verdict::kReproduced : Verdict::kNotReproduced;
    records.push_back(r);
  }
  for (const TrainRun& t : RunTraining(f, p, variants)) {
    results::Record r = TrainRecord(t, f, p);
    r.kind = results::Kind::kRepro;
    if (t.error.empty()) r.verdict = TrainSymptom(t) ? Verdict::kReproduced : Verdict::kNotReproduced;
    records.push_back(r);
  }
  return records;
}

}  // namespace ddp::autograd_lost_gather
