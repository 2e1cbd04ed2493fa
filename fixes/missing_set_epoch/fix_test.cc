// The fix must give, every epoch, exactly the one-process order (100%
// coverage, duplicates = the padding, a new order each epoch), and the
// batches it iterates must be PyTorch's own.
#include "fixes/missing_set_epoch/fix_run.h"

#include "core/data/testing/golden_reader.h"
#include "core/testing/backend.h"
#include "fixes/missing_set_epoch/golden_check.h"
#include "gtest/gtest.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {
namespace {

TEST(MissingSetEpochFix, EveryEpochIsTheOneProcessOrder) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.world_size = 4;
  f.seeds = 2;
  f.n = 1003;
  f.timeout = 10;
  PairOptions o;
  o.epochs = 4;
  const auto records = RunFix(f, o);
  ASSERT_EQ(records.size(), 2u);  // W = 2 and 4
  for (const auto& r : records) {
    ASSERT_EQ(r.verdict, results::Verdict::kExact) << r.measured.Dump() << " " << r.error;
    EXPECT_EQ(r.measured.Find("coverage_min")->AsDouble(), 1.0);
    EXPECT_EQ(r.measured.Find("matches_one_process")->AsDouble(), 8);  // 2 seeds x 4 epochs
    // 1003 = 501 x 2 + 1 = 250 x 4 + 3: padding 1 (W = 2) and 1 (W = 4).
    EXPECT_EQ(r.measured.Find("duplicates_max")->AsDouble(), Padding(1003, r.world_size));
    EXPECT_LE(r.measured.Find("identical_max")->AsDouble(), kMaxIdenticalFraction);
  }
}

TEST(MissingSetEpochFix, BatchesMatchPyTorchWithSetEpoch) {
  const GoldenComparison g = CompareWithTorchLoader(
      data::golden::RunfilePath("fixes/missing_set_epoch/golden/loader_golden.txt"));
  EXPECT_EQ(g.first_mismatch, "");
  EXPECT_GT(g.set_epoch_batches, 200);
  std::printf("%d PyTorch batches compared (%d with set_epoch)\n", g.batches_checked,
              g.set_epoch_batches);
}

}  // namespace
}  // namespace ddp::missing_set_epoch
