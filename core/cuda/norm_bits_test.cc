// The norm kernels' bits against the host emulation's (norm_emulation.h: the
// kernels' own functors in the kernels' reduction order, with fma): every
// output of every kernel, float and double, element by element with
// memcmp, on shapes with one and with several blocks per reduced segment,
// and one where the reduction and index division meet long segments.
//
// Why a GPU test of its own: norm_kernels_test holds the kernels to error
// bounds, which a changed rounding would still meet; core/cuda/README.md
// says the emulation gives the kernels' bits, and a change to the index
// arithmetic (IndexDivider) must change no bit. This is the check that
// could fail if either stopped being true. Prints one "[bits]" line per
// output: how many elements differ. Also with buffers one element off a
// 16-byte boundary, where the chunks are read by scalar accesses.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda/compare.h"
#include "core/cuda/device_backend.h"
#include "core/cuda/norm_emulation.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

using testing::DeviceBackend;

struct BitsShape {
  int n, c, h, w, groups;
};

// One block per channel; several blocks per channel (Chan merges across
// blocks); a channel of 32 x 56 x 56 values, as bench/norm_kernels' ResNet
// shape at a quarter of its channels.
const std::vector<BitsShape>& Shapes() {
  static const std::vector<BitsShape> shapes = {{5, 6, 7, 9, 3}, {16, 4, 32, 32, 2}, {32, 8, 56, 56, 4}};
  return shapes;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& gpu, const std::vector<T>& host, const std::string& what) {
  ASSERT_EQ(gpu.size(), host.size()) << what;
  int64_t differ = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) differ += std::memcmp(&gpu[i], &host[i], sizeof(T)) != 0;
  std::printf("[bits] %-6s %-44s %lld of %zu elements differ\n", sizeof(T) == 4 ? "float" : "double", what.c_str(),
              static_cast<long long>(differ), gpu.size());
  EXPECT_EQ(differ, 0) << what << ": the GPU's bits are not the emulation's";
}

// A shape's random inputs (x spread wider than dy), host copies.
template <typename T>
struct Inputs {
  Inputs(const BitsShape& s, uint64_t seed)
      : x(testing::ToStd(testing::RandomTensor<T>(s.n, s.c, s.h, s.w, seed, 3.0).data)),
        dy(testing::ToStd(testing::RandomTensor<T>(s.n, s.c, s.h, s.w, seed + 1).data)),
        gamma(testing::RandomNonZero<T>(s.c, seed + 2, 0.5, 1.5)),
        beta(testing::RandomNonZero<T>(s.c, seed + 3, -0.5, 0.5)),
        shape{s.n, s.c, int64_t{s.h} * s.w},
        size(static_cast<std::size_t>(shape.Size())),
        c(static_cast<std::size_t>(s.c)),
        tag(std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) +
            " ") {}
  std::vector<T> x, dy, gamma, beta;
  NchwShape shape;
  std::size_t size, c;
  std::string tag;
};

template <typename T>
void BatchNormBits(const BitsShape& s) {
  using Buf = DeviceBuffer<T>;
  const Inputs<T> in(s, 21);
  const auto& [x, dy, gamma, beta, shape, size, c, tag] = in;
  const std::vector<T> rm0 = testing::RandomNonZero<T>(s.c, 25, -1, 1);
  const std::vector<T> rv0 = testing::RandomNonZero<T>(s.c, 26, 0.5, 2);
  const int64_t count = int64_t{s.n} * s.h * s.w;

  DeviceBackend b;
  const Buf d_x(x), d_dy(dy), d_gamma(gamma), d_beta(beta);
  Buf d_rm(rm0), d_rv(rv0), mean(c), m2(c), invstd(c), y(size), sum_dy(c), sum_dy_xhat(c), dx(size), eval(c);
  b.BnLocalStats(d_x.get(), shape, mean.get(), m2.get());
  b.BnFinalizeStats(mean.get(), m2.get(), count, s.c, 1e-5, 0.1, invstd.get(), d_rm.get(), d_rv.get());
  b.BnNormalize(d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get());
  b.BnLocalGradSums(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), sum_dy.get(), sum_dy_xhat.get());
  b.BnInputGrad(d_dy.get(), d_x.get(), shape, mean.get(), invstd.get(), d_gamma.get(), sum_dy.get(),
                sum_dy_xhat.get(), count, dx.get());
  b.BnInvstdFromVar(d_rv.get(), s.c, 1e-5, eval.get());
  b.Sync();

  std::vector<T> h_mean(c), h_m2(c), h_invstd(c), h_rm = rm0, h_rv = rv0, h_y(size), h_sum_dy(c), h_sum_dy_xhat(c),
      h_dx(size), h_eval(c);
  emulate::BnLocalStats(x.data(), shape, h_mean.data(), h_m2.data());
  emulate::BnFinalizeStats(h_mean.data(), h_m2.data(), count, s.c, 1e-5, 0.1, h_invstd.data(), h_rm.data(),
                           h_rv.data());
  emulate::BnNormalize(x.data(), shape, h_mean.data(), h_invstd.data(), gamma.data(), beta.data(), h_y.data());
  emulate::BnLocalGradSums(dy.data(), x.data(), shape, h_mean.data(), h_invstd.data(), h_sum_dy.data(),
                           h_sum_dy_xhat.data());
  emulate::BnInputGrad(dy.data(), x.data(), shape, h_mean.data(), h_invstd.data(), gamma.data(), h_sum_dy.data(),
                       h_sum_dy_xhat.data(), count, h_dx.data());
  emulate::BnInvstdFromVar(h_rv.data(), s.c, 1e-5, h_eval.data());

  ExpectSameBits(mean.ToHost(), h_mean, tag + "BnLocalStats mean");
  ExpectSameBits(m2.ToHost(), h_m2, tag + "BnLocalStats M2");
  ExpectSameBits(invstd.ToHost(), h_invstd, tag + "BnFinalizeStats invstd");
  ExpectSameBits(d_rm.ToHost(), h_rm, tag + "BnFinalizeStats running_mean");
  ExpectSameBits(d_rv.ToHost(), h_rv, tag + "BnFinalizeStats running_var");
  ExpectSameBits(y.ToHost(), h_y, tag + "BnNormalize y");
  ExpectSameBits(sum_dy.ToHost(), h_sum_dy, tag + "BnLocalGradSums sum_dy");
  ExpectSameBits(sum_dy_xhat.ToHost(), h_sum_dy_xhat, tag + "BnLocalGradSums sum_dy_xhat");
  ExpectSameBits(dx.ToHost(), h_dx, tag + "BnInputGrad dx");
  ExpectSameBits(eval.ToHost(), h_eval, tag + "BnInvstdFromVar invstd");

  // SyncBatchNorm's merge of three ranks' statistics (counts 3, 0, 4 samples).
  const std::vector<int64_t> counts = {3 * int64_t{s.h} * s.w, 0, 4 * int64_t{s.h} * s.w};
  const std::vector<T> means = testing::RandomNonZero<T>(3 * c, 27, -1, 1);
  const std::vector<T> m2s = testing::RandomNonZero<T>(3 * c, 28, 0.5, 50);
  const Buf d_means(means), d_m2s(m2s);
  Buf g_mean(c), g_m2(c);
  b.BnMergeStats(counts, d_means.get(), d_m2s.get(), s.c, g_mean.get(), g_m2.get());
  b.Sync();
  std::vector<T> e_mean(c), e_m2(c);
  emulate::BnMergeStats(std::span<const int64_t>(counts), means.data(), m2s.data(), s.c, e_mean.data(), e_m2.data());
  ExpectSameBits(g_mean.ToHost(), e_mean, tag + "BnMergeStats mean");
  ExpectSameBits(g_m2.ToHost(), e_m2, tag + "BnMergeStats M2");
}

template <typename T>
void GroupNormBits(const BitsShape& s) {
  using Buf = DeviceBuffer<T>;
  const Inputs<T> in(s, 31);
  const auto& [x, dy, gamma, beta, shape, size, c, tag0] = in;
  const auto segs = static_cast<std::size_t>(s.n) * s.groups;
  const std::string tag = tag0 + "G=" + std::to_string(s.groups) + " ";

  DeviceBackend b;
  const Buf d_x(x), d_dy(dy), d_gamma(gamma), d_beta(beta);
  Buf y(size), mean(segs), invstd(segs), dx(size), dgamma(c), dbeta(c);
  b.GnForward(d_x.get(), shape, s.groups, 1e-5, d_gamma.get(), d_beta.get(), y.get(), mean.get(), invstd.get());
  b.GnBackward(d_dy.get(), d_x.get(), shape, s.groups, mean.get(), invstd.get(), d_gamma.get(), dx.get(),
               dgamma.get(), dbeta.get());
  b.Sync();

  std::vector<T> h_y(size), h_mean(segs), h_invstd(segs), h_dx(size), h_dgamma(c), h_dbeta(c);
  emulate::GnForward(x.data(), shape, s.groups, 1e-5, gamma.data(), beta.data(), h_y.data(), h_mean.data(),
                     h_invstd.data());
  emulate::GnBackward(dy.data(), x.data(), shape, s.groups, h_mean.data(), h_invstd.data(), gamma.data(), h_dx.data(),
                      h_dgamma.data(), h_dbeta.data());
  ExpectSameBits(y.ToHost(), h_y, tag + "GnForward y");
  ExpectSameBits(mean.ToHost(), h_mean, tag + "GnForward mean");
  ExpectSameBits(invstd.ToHost(), h_invstd, tag + "GnForward invstd");
  ExpectSameBits(dx.ToHost(), h_dx, tag + "GnBackward dx");
  ExpectSameBits(dgamma.ToHost(), h_dgamma, tag + "GnBackward dgamma");
  ExpectSameBits(dbeta.ToHost(), h_dbeta, tag + "GnBackward dbeta");
}

// The same inputs one element past a 16-byte boundary: the kernels then
// read and write their chunks of 4 floats / 2 doubles by scalar accesses
// (chunk.h) in the same order, so the bits must still be the emulation's.
template <typename T>
void MisalignedBits(const BitsShape& s) {
  const Inputs<T> in(s, 41);
  const auto& [x, dy, gamma, beta, shape, size, c, tag0] = in;
  const std::string tag = tag0 + "one element off 16 bytes: ";
  const auto segs = static_cast<std::size_t>(s.n) * s.groups;
  std::vector<T> px(size + 1), pdy(size + 1);
  std::copy(x.begin(), x.end(), px.begin() + 1);
  std::copy(dy.begin(), dy.end(), pdy.begin() + 1);
  DeviceBackend b;
  const DeviceBuffer<T> d_x(px), d_dy(pdy), d_gamma(gamma), d_beta(beta);
  DeviceBuffer<T> mean(c), m2(c), invstd(c), y(size + 1), sum_dy(c), sum_dy_xhat(c), g_mean(segs), g_invstd(segs),
      gy(size + 1);
  b.BnLocalStats(d_x.get() + 1, shape, mean.get(), m2.get());
  b.BnFinalizeStats(mean.get(), m2.get(), shape.n * shape.plane, s.c, 1e-5, 0.1, invstd.get(), static_cast<T*>(nullptr),
                    static_cast<T*>(nullptr));
  b.BnNormalize(d_x.get() + 1, shape, mean.get(), invstd.get(), d_gamma.get(), d_beta.get(), y.get() + 1);
  b.BnLocalGradSums(d_dy.get() + 1, d_x.get() + 1, shape, mean.get(), invstd.get(), sum_dy.get(), sum_dy_xhat.get());
  b.GnForward(d_x.get() + 1, shape, s.groups, 1e-5, d_gamma.get(), d_beta.get(), gy.get() + 1, g_mean.get(),
              g_invstd.get());
  b.Sync();
  std::vector<T> h_mean(c), h_m2(c), h_invstd(c), h_y(size), h_sum_dy(c), h_sum_dy_xhat(c), h_gy(size), h_gm(segs),
      h_gi(segs);
  emulate::BnLocalStats(x.data(), shape, h_mean.data(), h_m2.data());
  emulate::BnFinalizeStats(h_mean.data(), h_m2.data(), shape.n * shape.plane, s.c, 1e-5, 0.1, h_invstd.data(),
                           static_cast<T*>(nullptr), static_cast<T*>(nullptr));
  emulate::BnNormalize(x.data(), shape, h_mean.data(), h_invstd.data(), gamma.data(), beta.data(), h_y.data());
  emulate::BnLocalGradSums(dy.data(), x.data(), shape, h_mean.data(), h_invstd.data(), h_sum_dy.data(),
                           h_sum_dy_xhat.data());
  emulate::GnForward(x.data(), shape, s.groups, 1e-5, gamma.data(), beta.data(), h_gy.data(), h_gm.data(),
                     h_gi.data());
  const auto tail = [](const std::vector<T>& v) { return std::vector<T>(v.begin() + 1, v.end()); };
  ExpectSameBits(mean.ToHost(), h_mean, tag + "BnLocalStats mean");
  ExpectSameBits(m2.ToHost(), h_m2, tag + "BnLocalStats M2");
  ExpectSameBits(tail(y.ToHost()), h_y, tag + "BnNormalize y");
  ExpectSameBits(sum_dy_xhat.ToHost(), h_sum_dy_xhat, tag + "BnLocalGradSums sum_dy_xhat");
  ExpectSameBits(tail(gy.ToHost()), h_gy, tag + "GnForward y");
  ExpectSameBits(g_invstd.ToHost(), h_gi, tag + "GnForward invstd");
}

template <typename T>
class NormBitsTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NormBitsTest, Scalars);

TYPED_TEST(NormBitsTest, BatchNormKernelsGiveTheEmulationsBits) {
  DDP_SKIP_UNLESS_GPU();
  for (const BitsShape& s : Shapes()) BatchNormBits<TypeParam>(s);
}

TYPED_TEST(NormBitsTest, MisalignedBuffersGiveTheEmulationsBits) {
  DDP_SKIP_UNLESS_GPU();
  MisalignedBits<TypeParam>(Shapes()[1]);  // planes of 32 x 32: chunks of 16 bytes
}

TYPED_TEST(NormBitsTest, GroupNormKernelsGiveTheEmulationsBits) {
  DDP_SKIP_UNLESS_GPU();
  for (const BitsShape& s : Shapes()) GroupNormBits<TypeParam>(s);
}

}  // namespace
}  // namespace ddp::cuda
