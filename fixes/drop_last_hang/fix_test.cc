// Every fix completes with equal collective counts on all ranks (checked
// mode on), and every step's averaged gradient equals the serial mean over
// the contributing ranks (double, 1e-12). The join rows must really have
// steps with fewer contributors than ranks.
#include "fixes/drop_last_hang/fix_run.h"

#include "core/testing/backend.h"
#include "fixes/drop_last_hang/fixes.h"
#include "gtest/gtest.h"

namespace ddp::drop_last_hang {
namespace {

TEST(DropLastHangFix, EqualCollectivesAndSerialGradients) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.world_size = 4;
  f.n = 1003;
  f.batch_size = 32;
  f.timeout = 10;
  const auto records = RunFix(f, /*sweep=*/false);
  ASSERT_EQ(records.size(), 5u);
  for (const auto& r : records) {
    ASSERT_EQ(r.verdict, results::Verdict::kExact)
        << r.variant << " " << r.config.Dump() << " " << r.measured.Dump() << " " << r.error;
    EXPECT_TRUE(r.measured.Find("equal_collectives")->AsBool());
    EXPECT_LE(r.measured.Find("max_rel_grad_error")->AsDouble(), kGradTolerance);
    const std::string sharding = r.config.Find("sharding")->AsString();
    const double steps = r.measured.Find("steps")->AsDouble();
    if (r.variant == "join") {
      EXPECT_LT(r.measured.Find("contributors_min")->AsDouble(), 4) << "no rank ever joined early";
      // Two collectives per step (flag, gradients) and the final all-zero flag.
      EXPECT_EQ(r.measured.Find("collectives_per_rank")->AsArray()[0].AsDouble(), 2 * steps + 1);
    } else {
      EXPECT_EQ(r.measured.Find("contributors_min")->AsDouble(), 4);
    }
    if (r.variant == "drop_last") {
      EXPECT_EQ(steps, 8);  // 1025 -> 256 per rank -> 8 batches
    } else if (sharding == "uneven_shards") {
      EXPECT_EQ(steps, 9);
    }
  }
}

// The exactness check can fail: a join that divides by W instead of the
// number of contributors is off on the steps where a rank had no data.
TEST(DropLastHangFix, DividingByWorldSizeIsNotTheSerialMean) {
  const Config c{.sharding = Sharding::kUnevenShards, .n = 1025, .world_size = 4,
                 .batch_size = 32};
  const auto ref = SerialReference(Fix::kJoin, c);
  ASSERT_EQ(ref.size(), 9u);
  EXPECT_EQ(ref.back().contributors, 1);
  const Eigen::VectorXd wrong = ref.back().average / 4.0;
  EXPECT_GT((wrong - ref.back().average).cwiseAbs().maxCoeff() /
                ref.back().average.cwiseAbs().maxCoeff(),
            0.5);
}

}  // namespace
}  // namespace ddp::drop_last_hang
