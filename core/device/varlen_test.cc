// The varlen operations of Device<T> on the emulated device against a plain
// host reference (written here from the kernels' contract, not from the
// emulation): pad -> the gather's slots -> trim -> reorder, bit for bit, for
// shares of unequal length (an empty one included) and for the
// DistributedSampler's padding repeats; the coverage errors; the one copy
// ReorderByIndex counts (its 16-byte check). The GPU twin is
// cuda_varlen_test.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device/emulated_device.h"
#include "core/device/varlen_script.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

template <typename S>
class Varlen : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Varlen, Scalars);

TYPED_TEST(Varlen, PadGatherTrimReorderEqualsTheReference) {
  using S = TypeParam;
  for (const testing::VarlenCase& c : testing::VarlenCases()) {
    EmulatedDevice<S> dev;
    const testing::VarlenResult<S> got = testing::RunVarlen<S>(dev, c);
    const std::vector<S> want = testing::ReferenceVarlen<S>(c);
    ASSERT_EQ(got.out.size(), want.size()) << c.name;
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::bit_cast<testing::Bits<S>>(got.out[i]), std::bit_cast<testing::Bits<S>>(want[i]))
          << c.name << " value " << i;
    }
    // Up: each share; down: the result; and ReorderByIndex's check.
    int64_t shares = 0, up_bytes = 0;
    for (const auto& share : c.index) {
      shares += share.empty() ? 0 : 1;
      up_bytes += static_cast<int64_t>(share.size() * (8 + c.payload * sizeof(S)));
    }
    EXPECT_EQ(got.uploads, shares) << c.name;
    EXPECT_EQ(dev.copies().h2d[static_cast<int>(CopyKind::kPrediction)], (CopyTally{shares, up_bytes})) << c.name;
    EXPECT_EQ(dev.copies().d2h[static_cast<int>(CopyKind::kPrediction)],
              (CopyTally{want.empty() ? 0 : 1, static_cast<int64_t>(want.size() * sizeof(S))}))
        << c.name;
    EXPECT_EQ(dev.copies().d2h[static_cast<int>(CopyKind::kStatistic)], (CopyTally{1, 16})) << c.name;
  }
}

TEST(VarlenErrors, ReorderReportsIndicesOutsideAndMissing) {
  EmulatedDevice<double> dev;
  const std::vector<int64_t> index = {0, 5, 2, -1, 2};  // 5 and -1 outside [0, 4); 1 and 3 missing
  std::vector<double> rows(index.size()), out(4);
  try {
    dev.ReorderByIndex(index.data(), rows.data(), 5, 1, 4, out.data());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "ReorderByIndex: 2 of 5 indices outside [0, 4), 2 of [0, 4) never occurred");
  }
  EXPECT_EQ(dev.copies().d2h[static_cast<int>(CopyKind::kStatistic)], (CopyTally{1, 16}));
}

TEST(VarlenErrors, TrimRefusesACountAboveTheLongestShare) {
  EmulatedDevice<double> dev;
  std::vector<double> gathered(6), out(6);
  const std::vector<int64_t> counts = {1, 4};
  EXPECT_THROW(dev.TrimRows(gathered.data(), counts, 3, 1, out.data()), std::invalid_argument);
  std::vector<double> src(4), dst(3);
  EXPECT_THROW(dev.PadRows(src.data(), 4, 3, 1, 0.0, dst.data()), std::invalid_argument);
}

}  // namespace
}  // namespace ddp::device
