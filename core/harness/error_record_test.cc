// KeptAsError: a failed world's row becomes an error record with the
// world's failure; an ok world's row is left to the caller.
#include "core/harness/error_record.h"

#include <vector>

#include "gtest/gtest.h"

namespace ddp::harness {
namespace {

results::Record Row() {
  results::Record rec;
  rec.bug = "some_bug";
  rec.variant = "some_variant";
  rec.world_size = 2;
  rec.config["n"] = 7;
  return rec;
}

TEST(KeptAsError, FailedWorldAppendsTheRowAsAnErrorRecord) {
  WorldResult world;
  world.ok = false;
  world.failure = "rank 1: signal 6 (SIGABRT)";
  std::vector<results::Record> records;
  EXPECT_TRUE(KeptAsError(world, Row(), records));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, results::Verdict::kError);
  EXPECT_EQ(records[0].error, "rank 1: signal 6 (SIGABRT)");
  EXPECT_EQ(records[0].bug, "some_bug");
  EXPECT_EQ(records[0].variant, "some_variant");
  EXPECT_EQ(records[0].world_size, 2);
  EXPECT_EQ(Dump(records[0].config), Dump(Row().config));
}

TEST(KeptAsError, OkWorldAppendsNothing) {
  WorldResult world;
  world.ok = true;
  std::vector<results::Record> records;
  EXPECT_FALSE(KeptAsError(world, Row(), records));
  EXPECT_TRUE(records.empty());
}

}  // namespace
}  // namespace ddp::harness
