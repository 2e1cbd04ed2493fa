// The byte counts bench/norm_kernels divides by its times, against counts
// worked by hand from core/cuda/norm_kernels.cu (README.md's table).
#include "bench/norm_kernels/traffic.h"

#include <gtest/gtest.h>

namespace ddp::bench::norm_kernels {
namespace {

// N=2, C=4, 3x3: E = 72 elements per tensor, C = 4, G = 2, N*G = 4.
const Shape kSmall{2, 4, 3, 3};

struct Want {
  Row row;
  int64_t read, written, footprint;  // elements
};

TEST(TrafficTest, EveryRowByHand) {
  const Want want[] = {
      {Row::kBnStats, 72, 8, 80},             // x; mean, M2
      {Row::kBnFinalize, 16, 12, 20},         // mean, M2, running x2; invstd, running x2
      {Row::kBnNormalize, 88, 72, 88 + 72},   // x + 4 vectors; y
      {Row::kBnGradSums, 152, 8, 160},        // dy, x, mean, invstd; sum_dy, sum_dy_xhat
      {Row::kBnInputGrad, 164, 72, 236},      // dy, x + 5 vectors; dx
      {Row::kGnForward, 160, 80, 72 + 8 + 8 + 72},  // two passes over x
      {Row::kGnBackward, 472, 88, 72 + 72 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 72},  // three over dy and x
      {Row::kBnFwdBwd, 492, 172, 4 * 72 + 9 * 4},
      {Row::kSyncBnFwdBwd, 500, 180, 4 * 72 + 11 * 4},  // + BnMergeStats: 2 vectors in, 2 out
      {Row::kGnFwdBwd, 632, 168, 4 * 72 + 4 * 4 + 4 * 4},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(RowName(w.row));
    for (int64_t size : {4, 8}) {
      const Traffic t = RowTraffic(w.row, kSmall, size);
      EXPECT_EQ(t.read, w.read * size);
      EXPECT_EQ(t.written, w.written * size);
      EXPECT_EQ(t.bytes(), (w.read + w.written) * size);
      EXPECT_EQ(t.footprint, w.footprint * size);
    }
  }
}

TEST(TrafficTest, StepsAreTheSumOfTheirKernels) {
  const Shape s{32, 64, 56, 56};
  auto sum = [&](std::initializer_list<Row> rows) {
    Traffic total;
    for (Row r : rows) {
      total.read += RowTraffic(r, s, 4).read;
      total.written += RowTraffic(r, s, 4).written;
    }
    return total;
  };
  const Traffic bn = sum({Row::kBnStats, Row::kBnFinalize, Row::kBnNormalize, Row::kBnGradSums, Row::kBnInputGrad});
  EXPECT_EQ(RowTraffic(Row::kBnFwdBwd, s, 4).read, bn.read);
  EXPECT_EQ(RowTraffic(Row::kBnFwdBwd, s, 4).written, bn.written);
  EXPECT_EQ(RowTraffic(Row::kSyncBnFwdBwd, s, 4).bytes(), bn.bytes() + 4 * 64 * 4);
  const Traffic gn = sum({Row::kGnForward, Row::kGnBackward});
  EXPECT_EQ(RowTraffic(Row::kGnFwdBwd, s, 4).bytes(), gn.bytes());
}

TEST(TrafficTest, BandwidthBoundShape) {
  // 32 x 64 x 56 x 56 float: 25.7 MB per tensor. BnNormalize reads x and
  // writes y (plus 4 vectors of 64): 2 x 25,690,112 + 1,024 bytes.
  const Shape s{32, 64, 56, 56};
  EXPECT_EQ(s.elements(), 6'422'528);
  EXPECT_EQ(RowTraffic(Row::kBnNormalize, s, 4).bytes(), 51'381'248);
  // A training step moves 8 tensors' worth (stats 1, normalize 2, grad
  // sums 2, input grad 3) and touches 4.
  EXPECT_EQ(RowTraffic(Row::kBnFwdBwd, s, 8).bytes() / (s.elements() * 8), 8);
  EXPECT_EQ(RowTraffic(Row::kBnFwdBwd, s, 8).footprint / (s.elements() * 8), 4);
  // GroupNorm: 3 tensors forward, 7 backward.
  EXPECT_EQ(RowTraffic(Row::kGnForward, s, 4).bytes() / (s.elements() * 4), 3);
  EXPECT_EQ(RowTraffic(Row::kGnBackward, s, 4).bytes() / (s.elements() * 4), 7);
}

TEST(TrafficTest, PassesNameTheirKernels) {
  const std::vector<Pass> p = Passes(Row::kSyncBnFwdBwd, kSmall);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].kernel, "BnLocalStats");
  EXPECT_EQ(p[1].kernel, "BnMergeStats (one rank)");
  EXPECT_EQ(p[5].kernel, "BnInputGrad");
  EXPECT_EQ(Passes(Row::kGnBackward, kSmall).size(), 3u);
}

TEST(TrafficTest, RowNamesRoundTrip) {
  for (Row r : kAllRows) EXPECT_EQ(ParseRow(RowName(r)), r);
  EXPECT_FALSE(ParseRow("bn").has_value());
}

TEST(TrafficTest, ParseShapes) {
  std::string err;
  const auto s = ParseShapes("2x16x8x8,32x64x56x56", &err);
  ASSERT_TRUE(s.has_value()) << err;
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[1], (Shape{32, 64, 56, 56}));
  EXPECT_EQ(ShapeName((*s)[0]), "N:2/C:16/HW:8x8");
  for (const char* bad : {"", "2x16x8", "2x16x8x8x", "2x16x8x8,", "0x16x8x8", "1x16x1x1", "2x5x8x8",
                          "2x16x8xa", "-2x16x8x8", "65536x1024x64x64"}) {
    err.clear();
    EXPECT_FALSE(ParseShapes(bad, &err).has_value()) << bad;
    EXPECT_NE(err.find("--shapes"), std::string::npos) << bad << ": " << err;
  }
  ParseShapes("2x5x8x8", &err);
  EXPECT_NE(err.find("= 2 do not divide C"), std::string::npos) << err;
}

}  // namespace
}  // namespace ddp::bench::norm_kernels
