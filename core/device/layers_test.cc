// The norm layers on the emulated device (the kernels' arithmetic on the
// host) against core/nn's Eigen layers, one process: every output of a
// three-step training script and an eval step (layer_script.h), within the
// tolerance of the scalar type (device_tolerance.h); the copies they count
// for a known shape; the errors they share with core/nn; and the placement
// rule of make_device.h.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/cli/config_error.h"
#include "core/device/batch_norm.h"
#include "core/device/device_tolerance.h"
#include "core/device/emulated_device.h"
#include "core/device/group_norm.h"
#include "core/device/layer_script.h"
#include "core/device/make_device.h"
#include "core/exact/step_check.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

struct Shape {
  int n, c, h, w;
};

// Runs the script through `got` and `want` and holds every output to `tol`.
template <typename S>
void ExpectSameScript(nn::NormLayer<S>& got, nn::NormLayer<S>& want, const Shape& s, double tol, const char* what) {
  const auto a = testing::RunScript(got, s.n, s.h, s.w, 7);
  const auto b = testing::RunScript(want, s.n, s.h, s.w, 7);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = exact::NormwiseRelError(std::span<const double>(a[i].values), std::span<const double>(b[i].values));
    worst = std::max(worst, e);
    EXPECT_LE(e, tol) << what << " " << s.n << "x" << s.c << "x" << s.h << "x" << s.w << ": " << a[i].name;
  }
  std::printf("[emulated] %-6s %-10s %dx%dx%dx%d worst rel err %.3g (tolerance %.0e)\n", sizeof(S) == 4 ? "float" : "double",
              what, s.n, s.c, s.h, s.w, worst, tol);
}

const Shape kShapes[] = {{3, 4, 2, 5}, {16, 3, 8, 8}, {5, 8, 1, 1}, {2, 6, 40, 40}};

template <typename S>
class DeviceLayers : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DeviceLayers, Scalars);

TYPED_TEST(DeviceLayers, BatchNormEqualsEigen) {
  using S = TypeParam;
  for (const Shape& s : kShapes) {
    EmulatedDevice<S> dev;
    DeviceBatchNorm<S> got(&dev, s.c);
    nn::BatchNorm<S> want(s.c);
    ExpectSameScript<S>(got, want, s, StepTolerance<S>(), "BatchNorm");
  }
}

TYPED_TEST(DeviceLayers, GroupNormEqualsEigen) {
  using S = TypeParam;
  for (const Shape& s : kShapes) {
    const int groups = s.c % 2 == 0 ? 2 : 1;
    EmulatedDevice<S> dev;
    DeviceGroupNorm<S> got(&dev, s.c, groups);
    nn::GroupNorm<S> want(s.c, groups);
    ExpectSameScript<S>(got, want, s, StepTolerance<S>(), "GroupNorm");
  }
}

// last_stats() of the device layer is core/nn's (downloaded when asked).
TYPED_TEST(DeviceLayers, LastStatsEqualEigen) {
  using S = TypeParam;
  EmulatedDevice<S> dev;
  DeviceBatchNorm<S> got(&dev, 4);
  nn::BatchNorm<S> want(4);
  EXPECT_EQ(got.last_stats().count, 0);
  testing::RunScript<S>(got, 3, 2, 5, 11);
  testing::RunScript<S>(want, 3, 2, 5, 11);
  EXPECT_EQ(got.last_stats().count, want.last_stats().count);
  EXPECT_LE((got.last_stats().mean - want.last_stats().mean).cwiseAbs().maxCoeff(),
            StepTolerance<S>() * want.last_stats().mean.cwiseAbs().maxCoeff());
  EXPECT_LE((got.last_stats().m2 - want.last_stats().m2).cwiseAbs().maxCoeff(),
            StepTolerance<S>() * want.last_stats().m2.cwiseAbs().maxCoeff());
}

// The copies of one training step (Forward + Backward) of an N x C x H x W
// input, double: x and dy up, y and dx down (activations); gamma, beta,
// running stats and the count up in one call, the running stats and the
// gradient sums down (parameters); GroupNorm: gamma and beta up, dgamma and
// dbeta down. Nothing else crosses.
TEST(DeviceCopies, OneTrainingStepOfAKnownShape) {
  constexpr int n = 3, c = 4, h = 2, w = 5;
  constexpr int64_t act = int64_t{n} * c * h * w * 8;  // bytes of one activation tensor
  nn::Tensor4<double> x(n, c, h, w), dy(n, c, h, w);
  for (int64_t i = 0; i < x.Size(); ++i) {
    x.data[i] = static_cast<double>(i % 7);
    dy.data[i] = static_cast<double>(i % 5) - 2;
  }
  {
    EmulatedDevice<double> dev;
    DeviceBatchNorm<double> bn(&dev, c);
    bn.Forward(x);
    bn.Backward(dy);
    const CopyCount& k = dev.copies();
    const auto act_i = static_cast<int>(CopyKind::kActivation), par = static_cast<int>(CopyKind::kParameter),
               sta = static_cast<int>(CopyKind::kStatistic);
    EXPECT_EQ(k.h2d[act_i], (CopyTally{2, 2 * act}));
    EXPECT_EQ(k.d2h[act_i], (CopyTally{2, 2 * act}));
    EXPECT_EQ(k.h2d[par], (CopyTally{1, (4 * c + 1) * 8}));
    EXPECT_EQ(k.d2h[par], (CopyTally{2, 2 * (2 * c) * 8}));
    EXPECT_EQ(k.h2d[sta], (CopyTally{0, 0}));
    EXPECT_EQ(k.d2h[sta], (CopyTally{0, 0}));
    bn.last_stats();
    bn.last_stats();  // downloaded once
    EXPECT_EQ(dev.copies().d2h[sta], (CopyTally{1, 2 * c * 8}));
    // Eval: x, gamma/beta/running stats up; y down; nothing else.
    const CopyCount before = dev.copies();
    bn.SetTraining(false);
    bn.Forward(x);
    const CopyCount eval = dev.copies() - before;
    EXPECT_EQ(eval.H2d(), (CopyTally{2, act + 4 * c * 8}));
    EXPECT_EQ(eval.D2h(), (CopyTally{1, act}));
  }
  {
    EmulatedDevice<double> dev;
    DeviceGroupNorm<double> gn(&dev, c, 2);
    gn.Forward(x);
    gn.Backward(dy);
    const CopyCount& k = dev.copies();
    EXPECT_EQ(k.H2d(), (CopyTally{3, 2 * act + 2 * c * 8}));
    EXPECT_EQ(k.D2h(), (CopyTally{3, 2 * act + 2 * c * 8}));
  }
}

// An empty batch crosses nothing for its activations (zero-byte copies are
// neither made nor counted).
TEST(DeviceCopies, EmptyBatchMovesNoActivation) {
  EmulatedDevice<double> dev;
  DeviceGroupNorm<double> gn(&dev, 4, 2);
  const nn::Tensor4<double> x(0, 4, 3, 3);
  EXPECT_EQ(gn.Forward(x).Size(), 0);
  EXPECT_EQ(gn.Backward(x).Size(), 0);
  EXPECT_EQ(dev.copies().h2d[static_cast<int>(CopyKind::kActivation)], (CopyTally{0, 0}));
  EXPECT_EQ(dev.copies().d2h[static_cast<int>(CopyKind::kActivation)], (CopyTally{0, 0}));
}

TEST(DeviceLayersErrors, TheSameAsCoreNn) {
  EmulatedDevice<double> dev;
  DeviceBatchNorm<double> bn(&dev, 3);
  const nn::Tensor4<double> one(1, 3, 1, 1);
  try {
    bn.Forward(one);
    FAIL() << "no error for one value per channel";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "BatchNorm: expected more than 1 value per channel when training, got 1");
  }
  EXPECT_THROW(bn.Forward(nn::Tensor4<double>(2, 4, 1, 1)), std::invalid_argument);  // 4 channels, not 3
  bn.Forward(nn::Tensor4<double>(2, 3, 1, 1));
  EXPECT_THROW(bn.Backward(nn::Tensor4<double>(3, 3, 1, 1)), std::invalid_argument);
  EXPECT_THROW(DeviceGroupNorm<double>(&dev, 6, 4), std::invalid_argument);  // 4 does not divide 6
  EXPECT_THROW(DeviceBatchNorm<double>(nullptr, 3), std::invalid_argument);
}

// The device path is held to the suite's exactness tolerances.
TEST(DeviceTolerance, IsCoreExacts) {
  EXPECT_EQ(StepTolerance<double>(), exact::kDoubleTolerance);
  EXPECT_EQ(StepTolerance<float>(), exact::kFloatTolerance);
}

TEST(Placement, AutoIsTheGpuWithNcclAndTheHostOtherwise) {
  EXPECT_EQ(Resolve(Placement::kAuto, "nccl"), Placement::kCuda);
  EXPECT_EQ(Resolve(Placement::kAuto, "gloo"), Placement::kHost);
  EXPECT_EQ(Resolve(Placement::kAuto, ""), Placement::kHost);  // one process, no communicator
  EXPECT_EQ(Resolve(Placement::kEmulated, "nccl"), Placement::kEmulated);
  EXPECT_EQ(Resolve(Placement::kHost, "nccl"), Placement::kHost);
  EXPECT_EQ(Resolve(Placement::kCuda, ""), Placement::kCuda);  // one process: no collective to feed
  try {
    Resolve(Placement::kCuda, "gloo");
    FAIL() << "no error";
  } catch (const launch::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "--norm_device cuda needs --backend nccl (got 'gloo': its collectives read host memory only); use "
                 "host or emulated");
  }
  for (const char* s : {"auto", "host", "emulated", "cuda"}) EXPECT_STREQ(ToString(ParsePlacement(s)), s);
  try {
    ParsePlacement("gpu");
    FAIL() << "no error";
  } catch (const launch::ConfigError& e) {
    EXPECT_STREQ(e.what(), "--norm_device must be one of auto, host, emulated, cuda (got 'gpu')");
  }
  EXPECT_EQ(MakeDevice<double>(Placement::kHost), nullptr);
  EXPECT_EQ(MakeDevice<float>(Placement::kEmulated)->kind(), "emulated");
  EXPECT_THROW(MakeDevice<double>(Placement::kAuto), std::invalid_argument);
}

}  // namespace
}  // namespace ddp::device
