// The fix is exact: for W in {2,4,8}, both losses, even and uneven per-rank
// batches (down to one row on a rank), both adjoints of the differentiable
// all_gather give the DDP-averaged gradient equal to the one-process
// gradient of the full-batch objective to 1e-10 relative (double), and so
// does the seed's fix with the loss times W on the global loss. Training
// with them follows one-process training. The same check rejects the seed's
// unscaled fix (so it can fail).
#include <string>

#include "core/testing/backend.h"
#include "fixes/autograd_lost_gather/differentiable_gather.h"
#include "fixes/autograd_lost_gather/fix_run.h"
#include "gtest/gtest.h"
#include "repro/autograd_lost_gather/buggy_gathers.h"

namespace ddp::autograd_lost_gather {
namespace {

double M(const results::Record& r, const char* key) { return r.measured.Find(key)->AsDouble(); }

harness::CommonFlags Flags() {
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.batch_size = 8;
  f.seeds = 2;
  f.n = 200;
  f.timeout = 20;
  return f;
}

TEST(AutogradLostGatherFix, GradientsExactForEveryWorldSizeLossAndBatchLayout) {
  DDP_REQUIRE_BACKEND();
  PairFlags p;
  p.sweep = true;
  p.steps = 0;
  const auto records = RunFix(Flags(), p);
  // W in {2,4,8} x even/uneven x (3 variants on global + 2 on per_rank).
  ASSERT_EQ(records.size(), 3u * 2u * 5u);
  for (const auto& r : records) {
    SCOPED_TRACE(r.variant + " W=" + std::to_string(r.world_size) + " " + r.config.Dump() + " " +
                 r.measured.Dump() + " " + r.error);
    ASSERT_EQ(r.verdict, results::Verdict::kExact);
    EXPECT_LE(M(r, "rel_error"), 1e-10);
    EXPECT_NEAR(M(r, "norm_ratio"), 1.0, 1e-10);
  }
}

TEST(AutogradLostGatherFix, TrainingMatchesOneProcessTraining) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f = Flags();
  f.seeds = 1;
  f.world_size = 4;
  PairFlags p;
  p.steps = 40;
  int training = 0;
  for (const auto& r : RunFix(f, p)) {
    SCOPED_TRACE(r.variant + " " + r.config.Dump() + " " + r.measured.Dump() + " " + r.error);
    ASSERT_EQ(r.verdict, results::Verdict::kExact);
    if (r.config.Find("experiment")->AsString() != "training") continue;
    ++training;
    EXPECT_LE(M(r, "deviation"), 1e-10);
    EXPECT_GT(M(r, "param_change"), 1e-3) << "the model did train";
    const auto& curve = r.measured.Find("curve")->AsArray();
    const auto& ref = r.reference.Find("curve")->AsArray();
    ASSERT_EQ(curve.size(), ref.size());
    for (std::size_t i = 0; i < curve.size(); ++i) {
      EXPECT_NEAR(curve[i].Find("loss")->AsDouble(), ref[i].Find("loss")->AsDouble(), 1e-9);
    }
  }
  EXPECT_EQ(training, 5);
}

// The exactness check is not vacuous: the seed's fix without the factor W
// fails it on the global loss (g = g*/W) for uneven batches too.
TEST(AutogradLostGatherFix, CheckRejectsTheUnscaledSeedFix) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f = Flags();
  f.world_size = 4;
  PairFlags p;
  const std::vector<VariantSpec> unscaled = {
      {"local_reinsert", [] { return std::make_unique<LocalReinsertGather>(); },
       KeyPaths::kOwnRank, false, {LossKind::kGlobal}}};
  const auto checks = RunGradChecks(f, p, unscaled);
  ASSERT_EQ(checks.size(), 2u);
  for (const GradCheck& c : checks) {
    ASSERT_TRUE(c.error.empty()) << c.error;
    EXPECT_GT(c.rel_error, kFixGradTol);
    EXPECT_NEAR(c.rel_error, 0.75, 1e-10);
  }
}

}  // namespace
}  // namespace ddp::autograd_lost_gather
