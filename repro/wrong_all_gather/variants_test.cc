// The repro must keep reproducing: each wrong gather moves the global AUC
// by the amount its closed form predicts, raw unequal all_gathers go wrong
// on the engine, and the even splits behave (control rows).
#include "repro/wrong_all_gather/variants.h"

#include <cmath>
#include <string>

#include "core/testing/backend.h"
#include "gtest/gtest.h"

namespace ddp::wrong_all_gather {
namespace {

double M(const results::Record& r, const char* key) { return r.measured.Find(key)->AsDouble(); }

TEST(WrongAllGatherRepro, EveryVariantShowsItsSymptomAndSize) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.world_size = 4;
  f.n = 1003;
  f.batch_size = 32;
  f.seeds = 3;
  f.timeout = 5;
  const auto records = RunRepro(f, /*sweep=*/false);
  ASSERT_EQ(records.size(), 2u * 2u * 4u);  // N x batch x variant
  for (const auto& r : records) {
    SCOPED_TRACE(r.variant + " " + r.config.Dump() + " " + r.measured.Dump() + " " + r.error);
    ASSERT_EQ(r.verdict, results::ExpectedVerdict(r));
    const bool even = r.config.Find("n")->AsDouble() == 1000;  // 4 x 250
    if (r.variant == "raw_unequal") {
      EXPECT_EQ(r.control, even);
      if (!even) {
        EXPECT_TRUE(r.measured.Find("ranks_failed")->AsBool() ||
                    r.measured.Find("wrong_values")->AsBool());
      }
      continue;
    }
    EXPECT_LE(M(r, "closed_form_gap"), 1e-12) << "the engine result is the predicted one";
    EXPECT_EQ(M(r, "seeds_measured"), 3);
    if (r.variant == "misaligned") {
      // Pairs scrambled across ranks: AUC collapses towards 0.5 from 0.86.
      EXPECT_FALSE(r.control);
      EXPECT_GT(M(r, "error"), 0.2);
    } else if (even) {
      // 1000 = 4 x 250: no padding, no repeats: these gathers are exact.
      EXPECT_TRUE(r.control);
      EXPECT_LE(M(r, "error"), 1e-12);
    } else {
      // One padded zero (pad_no_trim) or one repeated sample
      // (sampler_duplicates) among ~1004: a small but nonzero error.
      EXPECT_FALSE(r.control);
      EXPECT_GT(M(r, "error"), 1e-7);
      EXPECT_LT(M(r, "error"), 1e-2);
    }
  }
}

}  // namespace
}  // namespace ddp::wrong_all_gather
