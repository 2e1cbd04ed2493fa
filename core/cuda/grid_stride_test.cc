// The kernels' grid-stride bodies (grid_stride.h) on the CPU: every thread
// of the grid that GridFor picks runs its body, as the GPU would, and every
// output index is written exactly once, past 65535 blocks of 256 threads
// too (where GridFor caps the grid and only the stride loop reaches).
#include "core/cuda/grid_stride.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace ddp::cuda::internal {
namespace {

// What one launch of <<<GridFor(total, threads), threads>>> runs.
template <typename Body>
void RunGrid(int64_t total, Body& body) {
  const int64_t grid = GridFor(total, kElementwiseThreads);
  for (int64_t b = 0; b < grid; ++b) {
    for (int64_t t = 0; t < kElementwiseThreads; ++t) {
      ForEachStrided(Thread{b, kElementwiseThreads, t, grid}, total, body);
    }
  }
}

constexpr int64_t kCovered = kMaxGridBlocks * kElementwiseThreads;  // without a stride

// A tiny accumulator: counts what it merged.
struct Tally {
  int32_t n;
  static Tally Zero() { return Tally{0}; }
  void Merge(const Tally& o) { n += o.n; }
};

struct CountWrites {
  std::vector<uint8_t>* writes;
  std::vector<int32_t>* merged;
  void operator()(int64_t segment, const Tally& acc) const {
    ++(*writes)[static_cast<std::size_t>(segment)];
    (*merged)[static_cast<std::size_t>(segment)] = acc.n;
  }
};

TEST(GridStride, GridIsCappedAndTheLoopCoversTheRest) {
  EXPECT_EQ(GridFor(kCovered + 1, kElementwiseThreads), kMaxGridBlocks);
  EXPECT_EQ(GridFor(0, kElementwiseThreads), 1u);
}

TEST(GridStride, SegmentFinishWritesEverySegmentOncePast65535Blocks) {
  for (const int64_t segments : {int64_t{1}, int64_t{1000}, kCovered, kCovered + 1, kCovered + 4097}) {
    constexpr int kBlocks = 2;
    std::vector<Tally> partials(static_cast<std::size_t>(segments * kBlocks), Tally{1});
    std::vector<uint8_t> writes(static_cast<std::size_t>(segments), 0);
    std::vector<int32_t> merged(static_cast<std::size_t>(segments), 0);
    SegmentFinishBody<Tally, CountWrites> body{partials.data(), kBlocks, CountWrites{&writes, &merged}};
    RunGrid(segments, body);
    int64_t wrong = 0;
    for (int64_t s = 0; s < segments; ++s) {
      wrong += writes[static_cast<std::size_t>(s)] != 1 || merged[static_cast<std::size_t>(s)] != kBlocks;
    }
    EXPECT_EQ(wrong, 0) << segments << " segments; last written " << int(writes.back());
  }
}

TEST(GridStride, MergeStatsWritesEveryChannelPast65535Blocks) {
  const int64_t channels = kCovered + 300;
  constexpr int kWorld = 2;
  const int64_t counts[kWorld] = {2, 6};
  std::vector<double> means(static_cast<std::size_t>(kWorld * channels));
  std::vector<double> m2s(means.size(), 1.0);
  for (int64_t c = 0; c < channels; ++c) {
    means[static_cast<std::size_t>(c)] = 1.0;                 // rank 0
    means[static_cast<std::size_t>(channels + c)] = 3.0;      // rank 1
  }
  std::vector<double> mean(static_cast<std::size_t>(channels), NAN);
  std::vector<double> m2(mean.size(), NAN);
  MergeStatsBody<double> body{counts, kWorld, means.data(), m2s.data(), channels, mean.data(), m2.data()};
  RunGrid(channels, body);
  // (2 values of mean 1, 6 of mean 3): mean 2.5, M2 = 1 + 1 + 4 * (2 * 6 / 8) = 8.
  int64_t wrong = 0;
  for (int64_t c = 0; c < channels; ++c) {
    wrong += mean[static_cast<std::size_t>(c)] != 2.5 || m2[static_cast<std::size_t>(c)] != 8.0;
  }
  EXPECT_EQ(wrong, 0) << "last channel mean " << mean.back();
}

}  // namespace
}  // namespace ddp::cuda::internal
