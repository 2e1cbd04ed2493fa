// The fixes must stay fixes, judged per step: DDP + SyncBatchNorm and DDP +
// GroupNorm give, at every step started from the one-process reference's
// state, the same averaged gradients, parameters and running statistics
// (1e-12 relative), and PreciseBN's cross-rank statistics equal the
// one-process average over the same batches (1e-12). Covered: W in
// {1, 2, 3, 4, 5, 8}, per-rank batches {1, 2, 3, 8}, uneven batches and empty
// ranks (every fix allows them). The free-running deviation is information.
#include <string>
#include <vector>

#include "core/testing/backend.h"
#include "fixes/small_batch_bn/fix_run.h"
#include "gtest/gtest.h"

namespace ddp::small_batch_bn {
namespace {

double M(const results::Record& r, const char* k) { return r.measured.Find(k)->AsDouble(); }

class SmallBatchBnFix : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(SmallBatchBnFix, EveryFixIsExactPerStep) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.timeout = 30;
  FixOptions o;
  o.batches = GetParam();
  o.steps = 3;
  o.precise_batches = 2;
  const auto records = RunFix(f, o);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << r.variant << " " << r.measured.Dump();
    EXPECT_LE(M(r, "worst_rel_err"), 1e-12) << r.variant;
    const int w = static_cast<int>(o.batches.size());
    EXPECT_EQ(r.measured.Find("step_check")->Find("steps_checked")->AsDouble(), 3.0 * w) << r.variant;
  }
  // Every quantity was compared: gradients, parameters, running statistics.
  EXPECT_GE(M(records[0], "grad_rel_err"), 0);
  EXPECT_GE(M(records[0], "param_rel_err"), 0);
  EXPECT_GE(M(records[0], "running_stats_rel_err"), 0);
  EXPECT_GE(M(records[1], "param_rel_err"), 0);
  EXPECT_EQ(records[1].measured.Find("running_stats_rel_err"), nullptr);  // GroupNorm has none
  EXPECT_GE(M(records[2], "precise_running_stats_rel_err"), 0);
  // SyncBN: two layers x (one all-gather forward + one all-reduce backward).
  EXPECT_EQ(M(records[0], "collectives_per_step"), 4);
  // PreciseBN does what it is for: the running statistics move toward the
  // eval-time population (information in the records; a floor here).
  EXPECT_GT(M(records[2], "rs_err_shrink"), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Worlds, SmallBatchBnFix,
                         ::testing::Values(std::vector<int>{1},                       // W=1, b=1
                                           std::vector<int>{8, 8},                    // W=2, b=8
                                           std::vector<int>{3, 3, 3},                 // W=3, b=3
                                           std::vector<int>{2, 2, 2, 2},              // W=4, b=2
                                           std::vector<int>{1, 1, 1, 1, 1},           // W=5, b=1
                                           std::vector<int>(8, 2),                    // W=8, b=2
                                           std::vector<int>{1, 3, 0, 5},              // uneven, an empty rank
                                           std::vector<int>{0, 0, 3}));               // two empty ranks

}  // namespace
}  // namespace ddp::small_batch_bn
