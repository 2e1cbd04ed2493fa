#include "bench/padding/profiles.h"

#include <numeric>

#include "bench/padding/cases.h"
#include "gtest/gtest.h"

namespace ddp::bench {
namespace {

using L = std::vector<std::int64_t>;

TEST(Lengths, EveryProfileAtW4) {
  EXPECT_EQ(Lengths(Profile::kEqual, 4, 128), (L{128, 128, 128, 128}));
  EXPECT_EQ(Lengths(Profile::kShortTail, 4, 128), (L{128, 128, 128, 64}));
  EXPECT_EQ(Lengths(Profile::kStraggler, 4, 128), (L{128, 128, 128, 256}));
  // 1 + 0.1 * (2q - 1) at q = 1/8, 3/8, 5/8, 7/8: 0.925, 0.975, 1.025, 1.075.
  EXPECT_EQ(Lengths(Profile::kUniform10, 4, 1000), (L{925, 975, 1025, 1075}));
  // Pareto(1.5) quantiles (1-q)^(-2/3) = 1.0931, 1.3680, 1.9230, 4.0000,
  // mean 2.0960: times 1000 / mean.
  EXPECT_EQ(Lengths(Profile::kHeavyTailed, 4, 1000), (L{522, 653, 917, 1908}));
}

TEST(Lengths, NeverZero) {
  for (Profile p : AllProfiles()) {
    for (std::int64_t v : Lengths(p, 8, 1)) EXPECT_GE(v, 1) << Name(p);
  }
}

TEST(Lengths, OneRank) {
  EXPECT_EQ(Lengths(Profile::kStraggler, 1, 10), (L{20}));
  EXPECT_EQ(Lengths(Profile::kHeavyTailed, 1, 10), (L{10}));
}

TEST(Cost, PadWastesWTimesMaxMinusSum) {
  const L lengths = {128, 128, 128, 256};  // sum 640, max 256
  const GatherCost pad = Cost(Method::kPadGatherTrim, lengths);
  EXPECT_DOUBLE_EQ(pad.useful_bytes, 640 * 8);
  EXPECT_DOUBLE_EQ(pad.wasted_bytes, (4 * 256 - 640) * 8);
  EXPECT_DOUBLE_EQ(pad.wire_bytes_per_rank, 3 * 8 + 3 * 256 * 8);
  const GatherCost v = Cost(Method::kAllgatherv, lengths);
  EXPECT_DOUBLE_EQ(v.wasted_bytes, 0);
  EXPECT_DOUBLE_EQ(v.wire_bytes_per_rank, 3 * 8 + 0.75 * 640 * 8);
  for (Method m : {Method::kFloorAllgather, Method::kFloorAllgatherv}) {
    const GatherCost floor = Cost(m, lengths);
    EXPECT_EQ(FloorCount(lengths), 160);
    EXPECT_DOUBLE_EQ(floor.wasted_bytes, 0);
    EXPECT_DOUBLE_EQ(floor.wire_bytes_per_rank, 3 * 160 * 8);
  }
  // Known counts: allgatherv's bytes without the sizes exchange.
  const GatherCost known = Cost(Method::kKnownCounts, lengths);
  EXPECT_DOUBLE_EQ(known.wasted_bytes, 0);
  EXPECT_DOUBLE_EQ(known.wire_bytes_per_rank, 0.75 * 640 * 8);
  // Bounded pad: W blocks of (1 + max), the padding wasted, no exchange.
  const GatherCost bounded = Cost(Method::kBoundedPad, lengths);
  EXPECT_DOUBLE_EQ(bounded.wasted_bytes, (4 * 256 - 640) * 8);
  EXPECT_DOUBLE_EQ(bounded.wire_bytes_per_rank, 3 * 257 * 8);
}

TEST(Cost, FloorRoundsUp) {
  const L lengths = {3, 2};  // sum 5: two blocks of 3
  EXPECT_EQ(FloorCount(lengths), 3);
  EXPECT_DOUBLE_EQ(Cost(Method::kFloorAllgatherv, lengths).wasted_bytes, 8);
}

TEST(Payload, ParsesSuffixesAndRejectsTheRest) {
  EXPECT_EQ(ParsePayload("1K"), 1024);
  EXPECT_EQ(ParsePayload("16M"), 16 << 20);
  EXPECT_EQ(ParsePayload("64M"), std::int64_t{64} << 20);
  EXPECT_EQ(ParsePayload("4096"), 4096);
  for (const char* bad : {"", "K", "65M", "12", "1G", "-8", "1.5K", "0", "8x"}) {
    EXPECT_FALSE(ParsePayload(bad).has_value()) << bad;
  }
  EXPECT_EQ(PayloadName(1024), "1KiB");
  EXPECT_EQ(PayloadName(16 << 20), "16MiB");
  EXPECT_EQ(PayloadName(1000), "1000B");
}

std::vector<std::string> Names(const std::vector<Case>& cases) {
  std::vector<std::string> out;
  for (const Case& c : cases) out.push_back(c.name);
  return out;
}

TEST(Cases, FloorsFirstAndKeptForFilteredMethods) {
  CaseOptions o;
  o.world_size = 3;
  o.profiles = {Profile::kEqual, Profile::kStraggler};
  o.payloads = {1024};
  std::vector<std::string> want;
  for (const char* p : {"equal", "straggler"}) {
    for (const char* m : {"floor_allgather", "floor_allgatherv", "floor_allgatherv_direct",
                          "pad_gather_trim", "allgatherv", "known_counts", "bounded_pad",
                          "known_counts_direct"}) {
      want.push_back(std::string("padding/gloo/W3/") + p + "/1KiB/" + m);
    }
  }
  EXPECT_EQ(Names(BuildCases(o)), want);
  o.filter = "straggler.*/allgatherv";
  const std::vector<Case> cases = BuildCases(o);
  EXPECT_EQ(Names(cases), (std::vector<std::string>{"padding/gloo/W3/straggler/1KiB/floor_allgather",
                                                     "padding/gloo/W3/straggler/1KiB/floor_allgatherv",
                                                     "padding/gloo/W3/straggler/1KiB/floor_allgatherv_direct",
                                                     "padding/gloo/W3/straggler/1KiB/allgatherv"}));
  EXPECT_EQ(cases[0].group, cases[3].group);
  EXPECT_EQ(cases[3].lengths, (L{128, 128, 256}));
  o.filter = "-equal";
  EXPECT_EQ(BuildCases(o).size(), 8u);
  o.filter = "(";
  EXPECT_THROW(BuildCases(o), std::invalid_argument);
}

TEST(Cases, OnlyGlooHasTheDirectExchange) {
  EXPECT_TRUE(IsFloor(Method::kFloorAllgathervDirect));
  EXPECT_TRUE(IsDirect(Method::kKnownCountsDirect));
  EXPECT_FALSE(IsDirect(Method::kKnownCounts));
  for (Method m : Methods("nccl", 4)) EXPECT_FALSE(IsDirect(m)) << Name(m);
  for (Method m : Methods("gloo", 2)) EXPECT_FALSE(IsDirect(m)) << Name(m);
  EXPECT_EQ(Methods("gloo", 3).size(), Methods("gloo", 2).size() + 2);
}

TEST(Cases, NcclAddsTheGroupedMethods) {
  CaseOptions o;
  o.backend = "nccl";
  o.profiles = {Profile::kEqual};
  o.payloads = {1024};
  EXPECT_EQ(BuildCases(o).size(), 8u);
  EXPECT_EQ(BuildCases(o).back().name, "padding/nccl/W4/equal/1KiB/grouped_sendrecv");
}

}  // namespace
}  // namespace ddp::bench
