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

double M(const results::Record& r, const char* k) { return r.measured.at(k).get<double>(); }

// RunFix on the test backend, 3 steps per check, PreciseBN over 2 batches.
std::vector<results::Record> RunSmall(harness::CommonFlags f, FixOptions o) {
  f.backend = testing::TestBackend();
  f.timeout = 30;
  o.steps = 3;
  o.precise_batches = 2;
  return RunFix(f, o);
}

// Where NCCL ranks share a GPU each world costs seconds (core/testing/
// README.md), and every case here is three worlds (one per fix): there only
// the hardest layout runs, uneven batches with an empty rank at W = 4, and
// the tracker cases run as their own tests (sync_batch_norm_test_nccl,
// precise_bn_tracker_test_nccl).
const std::vector<int> kSharedGpuBatches = {1, 3, 0, 5};
constexpr char kSharedGpuCut[] =
    "only batches {1, 3, 0, 5} (W = 4, uneven, an empty rank) of the 8 layouts; the tracker "
    "cases run as tests of their own";

class SmallBatchBnFix : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(SmallBatchBnFix, EveryFixIsExactPerStep) {
  DDP_REQUIRE_BACKEND();
  if (GetParam() != kSharedGpuBatches) {
    DDP_SKIP_IF_SHARED_GPU(8, kSharedGpuCut);
  }
  FixOptions o;
  o.batches = GetParam();
  const auto records = RunSmall({}, o);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << r.variant << " " << Dump(r.measured);
    EXPECT_LE(M(r, "worst_rel_err"), 1e-12) << r.variant;
    const int w = static_cast<int>(o.batches.size());
    EXPECT_EQ(r.measured.at("step_check").at("steps_checked").get<double>(), 3.0 * w) << r.variant;
  }
  // Every quantity was compared: gradients, parameters, running statistics.
  EXPECT_GE(M(records[0], "grad_rel_err"), 0);
  EXPECT_GE(M(records[0], "param_rel_err"), 0);
  EXPECT_GE(M(records[0], "running_stats_rel_err"), 0);
  EXPECT_GE(M(records[1], "param_rel_err"), 0);
  EXPECT_EQ(Find(records[1].measured, "running_stats_rel_err"), nullptr);  // GroupNorm has none
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

// The default run writes the tracker cases as records of their own, each
// naming its source (sync_batch_norm_test and precise_bn_tracker_test hold
// the same cases as tests): 22192 and 74944 through SyncBN, fvcore 152
// through PreciseBN with 1 and 3 batches on the two ranks; all exact.
TEST(SmallBatchBnFixTracker, DefaultRunRecordsTheTrackerCases) {
  DDP_REQUIRE_BACKEND();
  DDP_SKIP_IF_SHARED_GPU(2, kSharedGpuCut);
  harness::CommonFlags f;
  f.world_size = 2;
  f.batch_size = 2;
  const auto records = RunSmall(f, {});
  ASSERT_EQ(records.size(), 6u);  // the W x b setting's three fixes, then the three cases
  const struct {
    const char* variant;
    std::vector<int> batches;
    const char* source;
  } want[] = {{"sync_bn", {2, 6}, "issue 22192"},
              {"sync_bn", {0, 5}, "PR 74944"},
              {"precise_bn", {4, 4}, "fvcore issue 152"}};
  for (int i = 0; i < 3; ++i) {
    const results::Record& r = records[3 + i];
    EXPECT_EQ(r.variant, want[i].variant);
    const results::Json* source = Find(r.config, "source");
    ASSERT_NE(source, nullptr) << Dump(r.config);
    EXPECT_NE(source->get<std::string>().find(want[i].source), std::string::npos) << source->get<std::string>();
    std::vector<int> batches;
    for (const auto& b : r.config.at("batches")) batches.push_back(static_cast<int>(b.get<double>()));
    EXPECT_EQ(batches, want[i].batches);
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << Dump(r.measured);
  }
  EXPECT_EQ(Dump(records[5].config.at("precise_batches")), "[1,3]");
  // Every rank's running statistics were compared after every step.
  EXPECT_EQ(records[5].measured.at("step_check").at("steps_checked").get<double>(), 3.0 * 2);
}

}  // namespace
}  // namespace ddp::small_batch_bn
