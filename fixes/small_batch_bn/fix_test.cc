// The fixes must stay fixes: DDP + SyncBatchNorm and DDP + GroupNorm train
// exactly like one process on the same global batches (final parameters and
// running statistics to 1e-9 relative, identical validation accuracy every
// epoch), SyncBN leaves no cross-rank spread, and PreciseBN shrinks the
// running-stat error against the population.
#include <string>

#include "core/testing/backend.h"
#include "fixes/small_batch_bn/fix_run.h"
#include "gtest/gtest.h"

namespace ddp::small_batch_bn {
namespace {

double M(const results::Record& r, const char* k) { return r.measured.Find(k)->AsDouble(); }

TEST(SmallBatchBnFix, SyncBnAndGroupNormExactPreciseBnShrinksError) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.world_size = 4;
  f.batch_size = 2;
  f.backend = testing::TestBackend();
  f.seeds = 1;
  f.n = 256;
  f.timeout = 20;
  PairOptions o;
  o.epochs = 2;
  o.precise_batches = 16;
  const auto records = RunFix(f, o);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << r.variant << " " << r.measured.Dump();
  }
  for (int i : {0, 1}) {
    EXPECT_LE(M(records[i], "param_rel_err"), 1e-9) << records[i].variant;
    EXPECT_LE(M(records[i], "buffer_rel_err"), 1e-9) << records[i].variant;
    EXPECT_EQ(M(records[i], "val_acc_max_diff"), 0.0) << records[i].variant;
  }
  EXPECT_EQ(M(records[0], "rank_spread2"), 0.0);  // every rank normalises with the same statistics
  EXPECT_GE(M(records[2], "rs_err_shrink"), 1.5);
}

}  // namespace
}  // namespace ddp::small_batch_bn
