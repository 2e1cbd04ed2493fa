// The varlen gather's device steps against the host algorithm of
// fixes/wrong_all_gather/gather.cc (pad to the longest share, equal-count
// gather, trim each share, stable sort by sample index, keep the first copy
// of each index). Data movement only, so results must be bit-identical.
// Outputs are poisoned (NaN, or -1 for indices) before the kernels run; index
// padding is kIndexPad, distinct from the poison.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/check.h"
#include "core/cuda/compare.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/varlen_kernels.h"
#include "core/nn/rng.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

constexpr int64_t kWidth = 3;  // (index, score, label), as gather.cc packs a prediction
constexpr int64_t kIndexPad = -2;

// One rank's share: sample indices and their packed rows.
template <typename T>
struct Share {
  std::vector<int64_t> index;
  std::vector<T> rows;  // index.size() x kWidth
};

template <typename T>
std::vector<Share<T>> MakeShares(const std::vector<std::vector<int64_t>>& indices, uint64_t seed) {
  std::vector<Share<T>> shares;
  for (const auto& idx : indices) {
    Share<T> s;
    s.index = idx;
    for (int64_t i : idx) {
      // Score and label are functions of the index, so padding repeats carry
      // the same values as the original (as in the real scenario).
      nn::Rng per_sample(seed * 7919 + static_cast<uint64_t>(i));
      s.rows.push_back(static_cast<T>(i));
      s.rows.push_back(static_cast<T>(0.01 + 0.98 * per_sample.Uniform01()));
      s.rows.push_back(static_cast<T>(per_sample.NextU64() % 2));
    }
    shares.push_back(std::move(s));
  }
  return shares;
}

// DistributedSampler(shuffle, drop_last=false) shape: a permutation of
// [0, n) padded by repeating its head to a multiple of W, rank r taking
// every W-th index from r.
std::vector<std::vector<int64_t>> PaddedSamplerShards(int64_t n, int world, uint64_t seed) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  nn::Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.NextU64() % (i + 1)]);
  const int64_t total = (n + world - 1) / world * world;
  for (int64_t i = n; i < total; ++i) perm.push_back(perm[i - n]);
  std::vector<std::vector<int64_t>> shards(world);
  for (int64_t i = 0; i < total; ++i) shards[i % world].push_back(perm[i]);
  return shards;
}

// Strided sharding without padding: counts differ by one.
std::vector<std::vector<int64_t>> StridedShards(int64_t n, int world) {
  std::vector<std::vector<int64_t>> shards(world);
  for (int64_t i = 0; i < n; ++i) shards[i % world].push_back(i);
  return shards;
}

template <typename T>
struct HostGather {
  std::vector<T> padded;           // W x max_rows x width: the equal-count all_gather's result
  std::vector<int64_t> padded_ix;  // W x max_rows
  std::vector<T> trimmed;
  std::vector<int64_t> trimmed_ix;
  std::vector<T> ordered;  // n_out x width
};

// gather.cc's algorithm on the host.
template <typename T>
HostGather<T> HostReference(const std::vector<Share<T>>& shares, int64_t max_rows) {
  HostGather<T> h;
  for (const auto& s : shares) {
    const int64_t rows = static_cast<int64_t>(s.index.size());
    h.padded.insert(h.padded.end(), s.rows.begin(), s.rows.end());
    h.padded.insert(h.padded.end(), (max_rows - rows) * kWidth, T(0));
    h.padded_ix.insert(h.padded_ix.end(), s.index.begin(), s.index.end());
    h.padded_ix.insert(h.padded_ix.end(), max_rows - rows, kIndexPad);
    h.trimmed.insert(h.trimmed.end(), s.rows.begin(), s.rows.end());
    h.trimmed_ix.insert(h.trimmed_ix.end(), s.index.begin(), s.index.end());
  }
  std::vector<int64_t> order(h.trimmed_ix.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return h.trimmed_ix[a] < h.trimmed_ix[b]; });
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && h.trimmed_ix[order[k]] == h.trimmed_ix[order[k - 1]]) continue;  // drop repeats
    for (int64_t j = 0; j < kWidth; ++j) h.ordered.push_back(h.trimmed[order[k] * kWidth + j]);
  }
  return h;
}

template <typename T>
DeviceBuffer<T> Poisoned(std::size_t n) {
  DeviceBuffer<T> b(n);
  b.Poison();
  return b;
}

struct DeviceGather {
  template <typename T>
  static void Run(const std::vector<Share<T>>& shares, int64_t n_out) {
    const int world = static_cast<int>(shares.size());
    std::vector<int64_t> counts;
    for (const auto& s : shares) counts.push_back(static_cast<int64_t>(s.index.size()));
    const int64_t max_rows = *std::max_element(counts.begin(), counts.end());
    const int64_t m = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    const HostGather<T> ref = HostReference(shares, max_rows);
    ASSERT_EQ(static_cast<int64_t>(ref.ordered.size()), n_out * kWidth) << "test data must cover [0, n_out)";

    cudaStream_t stream = nullptr;
    DDP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto gathered = Poisoned<T>(world * max_rows * kWidth);
    auto gathered_ix = Poisoned<int64_t>(world * max_rows);
    std::vector<DeviceBuffer<T>> rows;
    std::vector<DeviceBuffer<int64_t>> ix;
    for (int r = 0; r < world; ++r) {
      rows.emplace_back(shares[r].rows);
      ix.emplace_back(shares[r].index);
      // Each rank pads its share; the equal-count all_gather puts share r at
      // slot r, which padding straight into the slot stands in for.
      PadRows<T>(rows.back().get(), counts[r], max_rows, kWidth, T(0), gathered.get() + r * max_rows * kWidth,
                 stream);
      PadRows<int64_t>(ix.back().get(), counts[r], max_rows, 1, kIndexPad, gathered_ix.get() + r * max_rows, stream);
    }
    auto trimmed = Poisoned<T>(m * kWidth);
    auto trimmed_ix = Poisoned<int64_t>(m);
    TrimRows<T>(gathered.get(), counts, max_rows, kWidth, trimmed.get(), stream);
    TrimRows<int64_t>(gathered_ix.get(), counts, max_rows, 1, trimmed_ix.get(), stream);
    auto ordered = Poisoned<T>(n_out * kWidth);
    ReorderByIndex<T>(trimmed_ix.get(), trimmed.get(), m, kWidth, n_out, ordered.get(), stream);  // synchronises
    DDP_CUDA_CHECK(cudaStreamDestroy(stream));

    EXPECT_EQ(gathered.ToHost(), ref.padded) << "PadRows";
    EXPECT_EQ(gathered_ix.ToHost(), ref.padded_ix) << "PadRows<int64_t>";
    EXPECT_EQ(trimmed.ToHost(), ref.trimmed) << "TrimRows";
    EXPECT_EQ(trimmed_ix.ToHost(), ref.trimmed_ix) << "TrimRows<int64_t>";
    EXPECT_EQ(ordered.ToHost(), ref.ordered) << "ReorderByIndex";
    std::printf("[gpu] %s W=%d counts %lld..%lld, %lld gathered rows -> %lld ordered: bit-identical\n",
                sizeof(T) == 4 ? "float" : "double", world, static_cast<long long>(*std::min_element(counts.begin(), counts.end())),
                static_cast<long long>(max_rows), static_cast<long long>(m), static_cast<long long>(n_out));
  }
};

template <typename T>
class VarlenKernelsTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(VarlenKernelsTest, Scalars);

TYPED_TEST(VarlenKernelsTest, PaddedSamplerSharesGatherToEachSampleOnce) {
  DDP_SKIP_UNLESS_GPU();
  // 1003 samples over 4 ranks: 251 each, the last index of rank 3 a repeat.
  DeviceGather::Run(MakeShares<TypeParam>(PaddedSamplerShards(1003, 4, 5), 1), 1003);
}

TYPED_TEST(VarlenKernelsTest, UnequalSharesIncludingAnEmptyRank) {
  DDP_SKIP_UNLESS_GPU();
  DeviceGather::Run(MakeShares<TypeParam>(StridedShards(1003, 4), 2), 1003);  // 251, 251, 251, 250
  DeviceGather::Run(MakeShares<TypeParam>({{4, 0, 2}, {}, {3, 1}}, 3), 5);    // 3, 0, 2
}

TYPED_TEST(VarlenKernelsTest, ReorderReportsIndicesOutOfRangeAndMissing) {
  DDP_SKIP_UNLESS_GPU();
  using T = TypeParam;
  const std::vector<T> rows(4 * kWidth, T(1));
  const DeviceBuffer<T> d_rows(rows);
  auto out = Poisoned<T>(4 * kWidth);
  const DeviceBuffer<int64_t> bad(std::vector<int64_t>{0, 1, 7, 3});
  try {
    ReorderByIndex<T>(bad.get(), d_rows.get(), 4, kWidth, 4, out.get(), nullptr);
    FAIL() << "no error for index 7 of 4";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 4 indices outside [0, 4), 1 of [0, 4) never occurred"),
              std::string::npos)
        << e.what();
  }
  const DeviceBuffer<int64_t> repeat(std::vector<int64_t>{0, 1, 1, 3});
  try {
    ReorderByIndex<T>(repeat.get(), d_rows.get(), 4, kWidth, 4, out.get(), nullptr);
    FAIL() << "no error for missing index 2";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0 of 4 indices outside [0, 4), 1 of [0, 4) never occurred"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddp::cuda
