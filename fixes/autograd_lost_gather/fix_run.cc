#include "fixes/autograd_lost_gather/fix_run.h"

#include <memory>

#include "fixes/autograd_lost_gather/differentiable_gather.h"
#include "repro/autograd_lost_gather/buggy_gathers.h"

namespace ddp::autograd_lost_gather {

std::vector<VariantSpec> FixVariants() {
  const std::vector<LossKind> both = {LossKind::kGlobal, LossKind::kPerRank};
  return {
      {"differentiable",
       [] { return std::make_unique<DifferentiableGather>(AdjointMethod::kReduceScatter); },
       KeyPaths::kAll, false, both},
      {"differentiable_allreduce",
       [] { return std::make_unique<DifferentiableGather>(AdjointMethod::kAllreduce); },
       KeyPaths::kAll, false, both},
      {"local_reinsert_xW", [] { return std::make_unique<LocalReinsertGather>(); },
       KeyPaths::kOwnRank, true, {LossKind::kGlobal}},
  };
}

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairFlags& p) {
  const auto variants = FixVariants();
  std::vector<results::Record> records;
  for (const GradCheck& c : RunGradChecks(f, p, variants)) {
    results::Record r = GradRecord(c, f);
    r.kind = results::Kind::kFix;
    if (c.error.empty()) {
      const bool exact = c.rel_error <= kFixGradTol && c.closed_form_gap <= kFixGradTol;
      r.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
    }
    records.push_back(r);
  }
  for (const TrainRun& t : RunTraining(f, p, variants)) {
    results::Record r = TrainRecord(t, f, p);
    r.kind = results::Kind::kFix;
    if (t.error.empty()) {
      r.verdict = t.deviation <= kTrainExactTol ? results::Verdict::kExact : results::Verdict::kInexact;
    }
    records.push_back(r);
  }
  return records;
}

}  // namespace ddp::autograd_lost_gather
