// What the kernel API guarantees without a GPU: CUDA failures become
// exceptions naming the call, file:line and CUDA's own message, and bad
// arguments are rejected before any CUDA call (so the null pointers below are
// never touched).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/check.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/norm_kernels.h"
#include "core/cuda/varlen_kernels.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

template <typename F>
std::string ThrownMessage(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

TEST(CudaCheck, ThrowsWithCallFileLineAndCudaMessage) {
  const int line = __LINE__ + 2;
  try {
    DDP_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "DDP_CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    EXPECT_NE(what.find("host_api_test.cc:" + std::to_string(line)), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue failed: cudaErrorInvalidValue"), std::string::npos) << what;
  }
}

TEST(CudaCheck, SuccessDoesNotThrow) { EXPECT_NO_THROW(DDP_CUDA_CHECK(cudaSuccess)); }

// A real CUDA call reaches the check: with no usable GPU, cudaMalloc fails
// and the exception says so; with one, the allocation simply works.
TEST(CudaCheck, DeviceBufferAllocationIsChecked) {
  int count = 0;
  const cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe == cudaSuccess && count > 0) {
    DeviceBuffer<float> b(16);
    b.Poison();
    for (float v : b.ToHost()) EXPECT_TRUE(v != v) << "poisoned values must be NaN";
    return;
  }
  const std::string what = ThrownMessage([] { DeviceBuffer<float> b(16); });
  std::printf("[host_api_test] no GPU; DeviceBuffer threw: %s\n", what.c_str());
  EXPECT_NE(what.find("device_buffer.h:"), std::string::npos) << what;
  EXPECT_NE(what.find("cudaMalloc"), std::string::npos) << what;
}

TEST(ArgumentChecks, BatchNormRejectsBadArguments) {
  EXPECT_NE(ThrownMessage([] { BnFinalizeStats<float>(nullptr, nullptr, 1, 3, 1e-5, 0.1, nullptr, nullptr, nullptr, nullptr); })
                .find("expected more than 1 value per channel"),
            std::string::npos);
  EXPECT_THROW(BnFinalizeStats<double>(nullptr, nullptr, 8, 3, 0.0, 0.1, nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(BnFinalizeStats<double>(nullptr, nullptr, 8, 3, 1e-5, 1.5, nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
  double running = 0;
  EXPECT_THROW(BnFinalizeStats<double>(nullptr, nullptr, 8, 3, 1e-5, 0.1, nullptr, &running, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(BnLocalStats<float>(nullptr, NchwShape{-1, 3, 4}, nullptr, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(BnInputGrad<float>(nullptr, nullptr, NchwShape{2, 3, 4}, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                                  nullptr, nullptr),
               std::invalid_argument);
  const std::vector<int64_t> negative = {3, -1};
  EXPECT_THROW(BnMergeStats<float>(negative, nullptr, nullptr, 4, nullptr, nullptr, nullptr), std::invalid_argument);
  const std::vector<int64_t> too_many(kMaxRanks + 1, 1);
  EXPECT_THROW(BnMergeStats<float>(too_many, nullptr, nullptr, 4, nullptr, nullptr, nullptr), std::invalid_argument);
  // Zero channels: nothing to launch, the merged count is still returned.
  const std::vector<int64_t> counts = {3, 0, 4};
  EXPECT_EQ(BnMergeStats<double>(counts, nullptr, nullptr, 0, nullptr, nullptr, nullptr), 7);
}

TEST(ArgumentChecks, GroupNormRejectsGroupsThatDoNotDivideChannels) {
  const std::string what = ThrownMessage(
      [] { GnForward<float>(nullptr, NchwShape{2, 6, 4}, 4, 1e-5, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr); });
  EXPECT_NE(what.find("channels=6, groups=4"), std::string::npos) << what;
  EXPECT_THROW(GnBackward<double>(nullptr, nullptr, NchwShape{2, 6, 4}, 0, nullptr, nullptr, nullptr, nullptr, nullptr,
                                  nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(GnForward<double>(nullptr, NchwShape{2, 6, 4}, 3, -1.0, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 nullptr),
               std::invalid_argument);
}

TEST(ArgumentChecks, VarlenRejectsBadCounts) {
  EXPECT_THROW(PadRows<double>(nullptr, 5, 4, 3, 0.0, nullptr, nullptr), std::invalid_argument);
  const std::vector<int64_t> over = {2, 5};
  const std::string what = ThrownMessage([&] { TrimRows<double>(nullptr, over, 4, 3, nullptr, nullptr); });
  EXPECT_NE(what.find("count of rank 1 is 5, outside [0, max_rows=4]"), std::string::npos) << what;
  EXPECT_THROW(TrimRows<float>(nullptr, std::vector<int64_t>{}, 4, 3, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(ReorderByIndex<float>(nullptr, nullptr, -1, 3, 4, nullptr, nullptr), std::invalid_argument);
  // Empty work launches nothing.
  EXPECT_NO_THROW(PadRows<int64_t>(nullptr, 0, 0, 3, 0, nullptr, nullptr));
  EXPECT_NO_THROW(TrimRows<float>(nullptr, std::vector<int64_t>{0, 0}, 4, 3, nullptr, nullptr));
}

}  // namespace
}  // namespace ddp::cuda
