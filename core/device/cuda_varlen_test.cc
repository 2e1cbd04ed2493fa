// The varlen operations of Device<T> on a real GPU (CudaDevice: core/cuda's
// varlen kernels on the device's stream) against the emulated device and
// the plain reference of varlen_script.h: bit for bit, the same copies
// counted. Tag gpu: skips with the reason where there is no GPU.
#include <bit>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/device/emulated_device.h"
#include "core/device/make_device.h"
#include "core/device/varlen_script.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

template <typename S>
class CudaVarlen : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaVarlen, Scalars);

TYPED_TEST(CudaVarlen, MatchesEmulationAndReferenceBitForBit) {
  DDP_SKIP_UNLESS_GPU();
  using S = TypeParam;
  for (const testing::VarlenCase& c : testing::VarlenCases()) {
    std::unique_ptr<Device<S>> gpu = MakeDevice<S>(Placement::kCuda);
    EmulatedDevice<S> emu;
    const auto g = testing::RunVarlen<S>(*gpu, c);
    const auto e = testing::RunVarlen<S>(emu, c);
    const std::vector<S> want = testing::ReferenceVarlen<S>(c);
    ASSERT_EQ(g.out.size(), want.size()) << c.name;
    int differ = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      differ += std::bit_cast<testing::Bits<S>>(g.out[i]) != std::bit_cast<testing::Bits<S>>(want[i]);
      differ += std::bit_cast<testing::Bits<S>>(e.out[i]) != std::bit_cast<testing::Bits<S>>(want[i]);
    }
    std::printf("[gpu] %-6s %-28s %zu values, %d differ from the reference\n", sizeof(S) == 4 ? "float" : "double",
                c.name.c_str(), want.size(), differ);
    EXPECT_EQ(differ, 0) << c.name;
    EXPECT_EQ(gpu->copies(), emu.copies()) << c.name;
  }
}

}  // namespace
}  // namespace ddp::device
