// The norm layers on a real GPU (CudaDevice) against the same layers on the
// emulated device and against core/nn's Eigen layers: every output of
// layer_script.h's steps, and the same copies counted. Prints the largest
// GPU-vs-emulation difference per layer ([gpu] lines): 0 would confirm on
// this layer path what core/cuda/README.md predicts for the kernels (the
// emulation computes the kernels' bits). Tag gpu: skips with the reason
// where there is no GPU.
#include <cstdio>
#include <memory>

#include "core/device/batch_norm.h"
#include "core/device/device_tolerance.h"
#include "core/device/emulated_device.h"
#include "core/device/group_norm.h"
#include "core/device/layer_script.h"
#include "core/device/make_device.h"
#include "core/exact/step_check.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

struct Shape {
  int n, c, h, w;
};
const Shape kShapes[] = {{3, 4, 2, 5}, {16, 3, 8, 8}, {5, 8, 1, 1}, {2, 6, 40, 40}, {0, 4, 3, 3}};

template <typename S>
double Worst(const std::vector<testing::Output>& a, const std::vector<testing::Output>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, exact::NormwiseRelError(std::span<const double>(a[i].values),
                                                    std::span<const double>(b[i].values)));
  }
  return a.size() == b.size() ? worst : INFINITY;
}

// Runs `make(device)`'s layer on the GPU, the emulation and (make(nullptr))
// Eigen; the GPU must match Eigen within the step tolerance and count the
// emulation's copies.
template <typename S, typename Make>
void Compare(const char* what, const Shape& s, Make make) {
  std::unique_ptr<Device<S>> gpu = MakeDevice<S>(Placement::kCuda);
  EmulatedDevice<S> emu;
  auto on_gpu = make(gpu.get());
  auto on_emu = make(&emu);
  auto on_host = make(nullptr);
  if (s.n == 0 && dynamic_cast<nn::BatchNormLayer<S>*>(on_host.get()) != nullptr) return;  // BN needs a batch
  const auto g = testing::RunScript<S>(*on_gpu, s.n, s.h, s.w, 7);
  const auto e = testing::RunScript<S>(*on_emu, s.n, s.h, s.w, 7);
  const auto h = testing::RunScript<S>(*on_host, s.n, s.h, s.w, 7);
  const double vs_emu = Worst<S>(g, e), vs_eigen = Worst<S>(g, h);
  std::printf("[gpu] %-6s %-9s %dx%dx%dx%d vs emulation %.3g, vs Eigen %.3g\n", sizeof(S) == 4 ? "float" : "double",
              what, s.n, s.c, s.h, s.w, vs_emu, vs_eigen);
  EXPECT_LE(vs_eigen, StepTolerance<S>()) << what;
  EXPECT_LE(vs_emu, StepTolerance<S>()) << what;
  EXPECT_EQ(gpu->copies(), emu.copies()) << what;
}

template <typename S>
class CudaLayers : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaLayers, Scalars);

TYPED_TEST(CudaLayers, MatchEmulationAndEigen) {
  DDP_SKIP_UNLESS_GPU();
  using S = TypeParam;
  for (const Shape& s : kShapes) {
    Compare<S>("BatchNorm", s, [&](Device<S>* d) -> std::unique_ptr<nn::NormLayer<S>> {
      if (d == nullptr) return std::make_unique<nn::BatchNorm<S>>(s.c);
      return std::make_unique<DeviceBatchNorm<S>>(d, s.c);
    });
    Compare<S>("GroupNorm", s, [&](Device<S>* d) -> std::unique_ptr<nn::NormLayer<S>> {
      if (d == nullptr) return std::make_unique<nn::GroupNorm<S>>(s.c, 1);
      return std::make_unique<DeviceGroupNorm<S>>(d, s.c, 1);
    });
  }
}

}  // namespace
}  // namespace ddp::device
