// The fix must equal the one-process accuracy and loss to 1e-12 in every
// configuration, with one collective per evaluation.
#include "fixes/mean_of_means/sum_count.h"

#include "core/testing/backend.h"
#include "gtest/gtest.h"

namespace ddp::mean_of_means {
namespace {

TEST(MeanOfMeansFix, ExactForEveryRowOfTheSweep) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.seeds = 2;
  f.n = 1003;
  f.batch_size = 32;
  f.timeout = 10;
  const auto records = RunFix(f, /*sweep=*/true);
  ASSERT_EQ(records.size(), 3u * 3u * 3u * 3u);  // W x sharding x N x batch
  for (const auto& r : records) {
    ASSERT_EQ(r.verdict, results::Verdict::kExact)
        << r.config.Dump() << " " << r.measured.Dump() << " " << r.error;
    EXPECT_LE(r.measured.Find("error")->AsDouble(), 1e-12);
    EXPECT_LE(r.measured.Find("max_loss_abs_error")->AsDouble(), 1e-12);
    EXPECT_EQ(r.measured.Find("count_mismatch")->AsDouble(), 0);
  }
}

}  // namespace
}  // namespace ddp::mean_of_means
