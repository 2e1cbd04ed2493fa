// randperm at n = 214748363 and 214748364 = (2^32-1)/20 against torch 1.13's
// digests: newer PyTorch releases switch algorithm at that n; 1.13 does not,
// and neither do we. Needs ~1.7 GB and ~10 s per n.
#include "core/data/testing/golden_reader.h"
#include "core/data/torch_randperm.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

TEST(RandpermLarge, MatchesTorchAroundNewerReleasesThreshold) {
  int checked = 0;
  for (const golden::Line& line :
       golden::ReadLines(golden::RunfilePath("core/data/golden/sampler_golden.txt"))) {
    if (line.kind != "randperm_digest" || std::stoll(line.fields[0]) < 200000000) continue;
    const int64_t n = std::stoll(line.fields[0]), seed = std::stoll(line.fields[1]);
    EXPECT_EQ(golden::Digest(TorchRandperm(n, seed)), line.payload) << "n=" << n;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace ddp::data
