// BatchNorm, SyncBatchNorm's local parts and GroupNorm kernels against the
// Eigen implementations of core/nn, on random non-zero inputs, float and
// double. Every output buffer is poisoned with NaN before the kernels run,
// so an element they fail to write makes the error infinite. Errors are
// normwise (compare.h) and printed as "[gpu] ..." lines in the test log.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/cuda/check.h"
#include "core/cuda/compare.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/norm_kernels.h"
#include "core/nn/batch_norm.h"
#include "core/nn/channel_stats.h"
#include "core/nn/group_norm.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

using testing::kTolerance;
using testing::RandomNonZero;
using testing::RandomTensor;
using testing::RelError;

constexpr double kEps = 1e-5;
constexpr double kMomentum = 0.1;

struct Shape {
  int n, c, h, w;
};

class Stream {
 public:
  Stream() { DDP_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }
  void Sync() const { DDP_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

template <typename T>
DeviceBuffer<T> Upload(const nn::Vector<T>& v) {
  return DeviceBuffer<T>(testing::ToStd(v));
}

template <typename T>
DeviceBuffer<T> Poisoned(std::size_t n) {
  DeviceBuffer<T> b(n);
  b.Poison();
  return b;
}

template <typename T>
nn::Vector<T> Row(const nn::Matrix<T>& m) {
  return m.row(0).transpose();
}

template <typename T>
void ExpectClose(const DeviceBuffer<T>& got, const nn::Vector<T>& ref, const std::string& what) {
  const std::vector<T> host = got.ToHost();
  const double err = RelError(host, ref);
  std::printf("[gpu] %-6s %-40s rel err %.3g\n", sizeof(T) == 4 ? "float" : "double", what.c_str(), err);
  EXPECT_LT(err, kTolerance<T>) << what << ": " << testing::CountNaN<T>(host) << " NaN (unwritten) of "
                                << host.size();
}

template <typename T>
class NormKernelsTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NormKernelsTest, Scalars);

TYPED_TEST(NormKernelsTest, BatchNormTrainingForwardBackwardMatchEigen) {
  DDP_SKIP_UNLESS_GPU();
  using T = TypeParam;
  // One block per channel, 16 blocks per channel (cross-block Chan merges), N x C.
  for (const Shape& s : {Shape{5, 6, 7, 9}, Shape{16, 3, 32, 32}, Shape{7, 4, 1, 1}}) {
    const nn::Tensor4<T> x = RandomTensor<T>(s.n, s.c, s.h, s.w, 1);
    const nn::Tensor4<T> dy = RandomTensor<T>(s.n, s.c, s.h, s.w, 2);
    const std::string tag = x.ShapeString() + " ";
    nn::BatchNorm<T> bn(s.c, nn::BatchNormOptions{kMomentum, kEps});
    const std::vector<T> gamma = RandomNonZero<T>(s.c, 3, 0.5, 1.5);
    const std::vector<T> beta = RandomNonZero<T>(s.c, 4, -0.5, 0.5);
    const std::vector<T> rm0 = RandomNonZero<T>(s.c, 5, -1, 1);
    const std::vector<T> rv0 = RandomNonZero<T>(s.c, 6, 0.5, 2);
    for (int c = 0; c < s.c; ++c) {
      bn.weight().value(0, c) = gamma[c];
      bn.bias().value(0, c) = beta[c];
      bn.running_mean()(0, c) = rm0[c];
      bn.running_var()(0, c) = rv0[c];
    }
    const nn::Tensor4<T> y_ref = bn.Forward(x);
    const nn::ChannelStats<T> stats = bn.last_stats();
    const nn::ChannelGradSums<T> sums_ref = bn.LocalGradSums(dy);
    const nn::Tensor4<T> dx_ref = bn.Backward(dy);
    const nn::Vector<T> invstd_ref =
        ((stats.m2 / static_cast<T>(stats.count)).array() + static_cast<T>(kEps)).rsqrt().matrix();

    Stream stream;
    const NchwShape shape{s.n, s.c, int64_t{s.h} * s.w};
    const DeviceBuffer<T> d_x = Upload(x.data), d_dy = Upload(dy.data);
    const DeviceBuffer<T> d_gamma(gamma), d_beta(beta);
    DeviceBuffer<T> d_rm(rm0), d_rv(rv0);
    auto mean = Poisoned<T>(s.c), m2 = Poisoned<T>(s.c), invstd = Poisoned<T>(s.c);
    auto y = Poisoned<T>(x.Size()), dx = Poisoned<T>(x.Size());
    auto sum_dy = Poisoned<T>(s.c), sum_dy_xhat = Poisoned<T>(s.c);
    BnLocalStats(d_x.get(), shape, mean.get(), m2.get(), stream.get());
    BnFinalizeStats(mean.get(), m2.get(), stats.count, s.c, kEps, kMomentum, invstd.get(), d_rm.get(), d_rv.get(),
                    stream.get());
    BnNormalize(d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get(), stream.get());
    BnLocalGradSums(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), sum_dy.get(), sum_dy_xhat.get(),
                    stream.get());
    BnInputGrad(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), sum_dy.get(),
                sum_dy_xhat.get(), stats.count, dx.get(), stream.get());
    stream.Sync();
    ExpectClose(mean, stats.mean, tag + "BnLocalStats mean");
    ExpectClose(m2, stats.m2, tag + "BnLocalStats M2");
    ExpectClose(invstd, invstd_ref, tag + "BnFinalizeStats invstd");
    ExpectClose(d_rm, Row(bn.running_mean()), tag + "running_mean");
    ExpectClose(d_rv, Row(bn.running_var()), tag + "running_var");
    ExpectClose(y, y_ref.data, tag + "BnNormalize y");
    ExpectClose(sum_dy, sums_ref.sum_dy, tag + "sum_dy (= dbeta)");
    ExpectClose(sum_dy_xhat, sums_ref.sum_dy_xhat, tag + "sum_dy_xhat (= dgamma)");
    ExpectClose(sum_dy, Row(bn.bias().grad), tag + "dbeta");
    ExpectClose(sum_dy_xhat, Row(bn.weight().grad), tag + "dgamma");
    ExpectClose(dx, dx_ref.data, tag + "BnInputGrad dx");

    // The reduction order is fixed: a second run gives the same bits.
    const std::vector<T> first_m2 = m2.ToHost();
    m2.Poison();
    BnLocalStats(d_x.get(), shape, mean.get(), m2.get(), stream.get());
    stream.Sync();
    EXPECT_EQ(std::memcmp(first_m2.data(), m2.ToHost().data(), first_m2.size() * sizeof(T)), 0) << tag;
  }
}

TYPED_TEST(NormKernelsTest, BatchNormEvalMatchesEigen) {
  DDP_SKIP_UNLESS_GPU();
  using T = TypeParam;
  const nn::Tensor4<T> x = RandomTensor<T>(6, 5, 4, 3, 7);
  nn::BatchNorm<T> bn(5, nn::BatchNormOptions{kMomentum, kEps});
  const std::vector<T> gamma = RandomNonZero<T>(5, 8, 0.5, 1.5), beta = RandomNonZero<T>(5, 9, -0.5, 0.5);
  for (int c = 0; c < 5; ++c) {
    bn.weight().value(0, c) = gamma[c];
    bn.bias().value(0, c) = beta[c];
  }
  bn.Forward(RandomTensor<T>(6, 5, 4, 3, 10));  // gives the running stats non-trivial values
  bn.SetTraining(false);
  const nn::Tensor4<T> y_ref = bn.Forward(x);

  Stream stream;
  const DeviceBuffer<T> d_x = Upload(x.data), d_gamma(gamma), d_beta(beta);
  const DeviceBuffer<T> d_rm = Upload(Row(bn.running_mean())), d_rv = Upload(Row(bn.running_var()));
  auto invstd = Poisoned<T>(5), y = Poisoned<T>(x.Size());
  BnInvstdFromVar(d_rv.get(), 5, kEps, invstd.get(), stream.get());
  BnNormalize(d_x.get(), NchwShape{6, 5, 12}, d_rm.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get(),
              stream.get());
  stream.Sync();
  ExpectClose(y, y_ref.data, x.ShapeString() + " eval y");
}

// SyncBatchNorm: three participants with 3, 0 and 4 samples, each running the
// local kernels on its slice; merged statistics (BnMergeStats) and summed
// gradient sums (the all-reduce, done on the host here) must give what one
// BatchNorm computes on the whole batch.
TYPED_TEST(NormKernelsTest, SyncBatchNormPartsEqualWholeBatch) {
  DDP_SKIP_UNLESS_GPU();
  using T = TypeParam;
  constexpr int kC = 4, kH = 5, kW = 5;
  const std::vector<int64_t> samples = {3, 0, 4};
  const int world = static_cast<int>(samples.size());
  const nn::Tensor4<T> x = RandomTensor<T>(7, kC, kH, kW, 11);
  const nn::Tensor4<T> dy = RandomTensor<T>(7, kC, kH, kW, 12);
  nn::BatchNorm<T> bn(kC, nn::BatchNormOptions{kMomentum, kEps});
  const std::vector<T> gamma = RandomNonZero<T>(kC, 13, 0.5, 1.5), beta = RandomNonZero<T>(kC, 14, -0.5, 0.5);
  for (int c = 0; c < kC; ++c) {
    bn.weight().value(0, c) = gamma[c];
    bn.bias().value(0, c) = beta[c];
  }
  const nn::Tensor4<T> y_ref = bn.Forward(x);
  const nn::Tensor4<T> dx_ref = bn.Backward(dy);
  const nn::ChannelStats<T> whole = bn.last_stats();

  // Eigen's per-part statistics and their merge, for BnMergeStats.
  std::vector<nn::ChannelStats<T>> parts;
  const int64_t plane = int64_t{kH} * kW;
  int64_t first = 0;
  for (int64_t n : samples) {
    nn::Tensor4<T> part(static_cast<int>(n), kC, kH, kW);
    part.data = x.data.segment(first * kC * plane, n * kC * plane);
    parts.push_back(nn::ComputeChannelStats(part));
    first += n;
  }
  const nn::ChannelStats<T> merged_ref = nn::MergeChannelStats(std::span<const nn::ChannelStats<T>>(parts));

  Stream stream;
  const DeviceBuffer<T> d_x = Upload(x.data), d_dy = Upload(dy.data), d_gamma(gamma), d_beta(beta);
  auto means = Poisoned<T>(world * kC), m2s = Poisoned<T>(world * kC);
  std::vector<int64_t> counts;
  first = 0;
  for (int r = 0; r < world; ++r) {
    counts.push_back(samples[r] * plane);
    BnLocalStats(d_x.get() + first * kC * plane, NchwShape{samples[r], kC, plane}, means.get() + r * kC,
                 m2s.get() + r * kC, stream.get());
    first += samples[r];
  }
  auto mean = Poisoned<T>(kC), m2 = Poisoned<T>(kC), invstd = Poisoned<T>(kC);
  const int64_t total = BnMergeStats<T>(counts, means.get(), m2s.get(), kC, mean.get(), m2.get(), stream.get());
  ASSERT_EQ(total, whole.count);
  BnFinalizeStats<T>(mean.get(), m2.get(), total, kC, kEps, kMomentum, invstd.get(), nullptr, nullptr,
                     stream.get());
  auto y = Poisoned<T>(x.Size()), dx = Poisoned<T>(x.Size());
  auto sums = Poisoned<T>(2 * world * kC);  // per rank: sum_dy (C), sum_dy_xhat (C)
  first = 0;
  for (int r = 0; r < world; ++r) {
    const NchwShape part{samples[r], kC, plane};
    const int64_t off = first * kC * plane;
    BnNormalize(d_x.get() + off, part, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get() + off,
                stream.get());
    BnLocalGradSums(d_dy.get() + off, d_x.get() + off, part, mean.get(), invstd.get(), sums.get() + 2 * r * kC,
                    sums.get() + (2 * r + 1) * kC, stream.get());
    first += samples[r];
  }
  stream.Sync();
  // The all-reduce (sum in rank order), as the comm layer would do it.
  const std::vector<T> local = sums.ToHost();
  std::vector<T> global(2 * kC, T(0));
  for (int r = 0; r < world; ++r) {
    for (int k = 0; k < 2 * kC; ++k) global[k] += local[2 * r * kC + k];
  }
  const DeviceBuffer<T> d_global(global);
  first = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t off = first * kC * plane;
    BnInputGrad(d_dy.get() + off, d_x.get() + off, NchwShape{samples[r], kC, plane}, mean.get(), invstd.get(),
                d_gamma.get(), d_global.get(), d_global.get() + kC, total, dx.get() + off, stream.get());
    first += samples[r];
  }
  stream.Sync();
  ExpectClose(mean, merged_ref.mean, "BnMergeStats mean vs MergeChannelStats");
  ExpectClose(m2, merged_ref.m2, "BnMergeStats M2 vs MergeChannelStats");
  ExpectClose(mean, whole.mean, "SyncBN mean vs whole batch");
  ExpectClose(m2, whole.m2, "SyncBN M2 vs whole batch");
  ExpectClose(y, y_ref.data, "SyncBN y vs whole batch");
  ExpectClose(dx, dx_ref.data, "SyncBN dx vs whole batch");
}

TYPED_TEST(NormKernelsTest, GroupNormForwardBackwardMatchEigen) {
  DDP_SKIP_UNLESS_GPU();
  using T = TypeParam;
  struct Case {
    Shape s;
    int groups;
  };
  // Small groups; 8192-value groups (8 blocks each); N x C input.
  for (const Case& k : {Case{{4, 6, 5, 7}, 3}, Case{{2, 4, 64, 64}, 2}, Case{{5, 8, 1, 1}, 4}}) {
    const Shape& s = k.s;
    const nn::Tensor4<T> x = RandomTensor<T>(s.n, s.c, s.h, s.w, 21);
    const nn::Tensor4<T> dy = RandomTensor<T>(s.n, s.c, s.h, s.w, 22);
    const std::string tag = x.ShapeString() + " G=" + std::to_string(k.groups) + " ";
    nn::GroupNorm<T> gn(s.c, k.groups, kEps);
    const std::vector<T> gamma = RandomNonZero<T>(s.c, 23, 0.5, 1.5), beta = RandomNonZero<T>(s.c, 24, -0.5, 0.5);
    for (int c = 0; c < s.c; ++c) {
      gn.weight().value(0, c) = gamma[c];
      gn.bias().value(0, c) = beta[c];
    }
    const nn::Tensor4<T> y_ref = gn.Forward(x);
    const nn::Tensor4<T> dx_ref = gn.Backward(dy);
    // Group statistics as group_norm.h computes them (two passes).
    const int64_t len = int64_t{s.c / k.groups} * s.h * s.w;
    nn::Vector<T> mean_ref(s.n * k.groups), invstd_ref(s.n * k.groups);
    for (int64_t ng = 0; ng < s.n * k.groups; ++ng) {
      const auto block = Eigen::Map<const nn::Vector<T>>(x.data.data() + ng * len, len);
      const T mean = block.mean();
      const T var = (block.array() - mean).square().mean();
      mean_ref[ng] = mean;
      invstd_ref[ng] = T(1) / std::sqrt(var + static_cast<T>(kEps));
    }

    Stream stream;
    const NchwShape shape{s.n, s.c, int64_t{s.h} * s.w};
    const DeviceBuffer<T> d_x = Upload(x.data), d_dy = Upload(dy.data), d_gamma(gamma), d_beta(beta);
    auto y = Poisoned<T>(x.Size()), dx = Poisoned<T>(x.Size());
    auto mean = Poisoned<T>(s.n * k.groups), invstd = Poisoned<T>(s.n * k.groups);
    auto dgamma = Poisoned<T>(s.c), dbeta = Poisoned<T>(s.c);
    GnForward(d_x.get(), shape, k.groups, kEps, d_gamma.get(), d_beta.get(), y.get(), mean.get(), invstd.get(),
              stream.get());
    GnBackward(d_dy.get(), d_x.get(), shape, k.groups, mean.get(), invstd.get(), d_gamma.get(), dx.get(),
               dgamma.get(), dbeta.get(), stream.get());
    stream.Sync();
    ExpectClose(mean, mean_ref, tag + "GnForward mean");
    ExpectClose(invstd, invstd_ref, tag + "GnForward invstd");
    ExpectClose(y, y_ref.data, tag + "GnForward y");
    ExpectClose(dx, dx_ref.data, tag + "GnBackward dx");
    ExpectClose(dgamma, Row(gn.weight().grad), tag + "GnBackward dgamma");
    ExpectClose(dbeta, Row(gn.bias().grad), tag + "GnBackward dbeta");
  }
}

}  // namespace
}  // namespace ddp::cuda
