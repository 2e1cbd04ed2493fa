#include "fixes/autograd_lost_gather/fix_run.h"

#include <memory>

#include "core/device/device_flag.h"
#include "fixes/autograd_lost_gather/differentiable_gather.h"
#include "repro/autograd_lost_gather/buggy_gathers.h"
#include "repro/autograd_lost_gather/gradient_checks.h"
#include "repro/autograd_lost_gather/training_runs.h"

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

PairFlags FixPairFlags(PairFlags p) {
  p.layouts = {Layout::kEven, Layout::kUneven, Layout::kEmptyRank};
  if (p.sweep) {
    p.sweep_worlds = {1, 2, 3, 4, 5, 8};
    p.curve_worlds = {2, 4, 8};
    p.grid = GridOf(p.sweep_worlds, {1, 2, 3, 8});
  }
  return p;
}

std::string ValidateFix(const harness::CommonFlags& f, const PairFlags&) {
  if (static_cast<int64_t>(f.world_size) * f.batch_size < 2) {
    return "--world_size x --batch_size must be at least 2 (allowed: --batch_size 1..1000000): "
           "the global loss needs both classes in a step's rows";
  }
  if (f.n < 2) return "--n (held-out rows) must be at least 2 (allowed: 2..100000000)";
  return "";
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
      const bool exact = exact::StepCheck::FromJson(t.step_check).exact();
      r.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
    }
    records.push_back(r);
  }
  return records;
}

}  // namespace ddp::autograd_lost_gather
