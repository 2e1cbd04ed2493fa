// DDP_CUDA_SKIP_UNLESS_GPU(): core/testing/gpu.h's DDP_SKIP_UNLESS_GPU()
// (skip with the reason printed; fail under DDP_PITFALLS_REQUIRE_GPU=1), but
// probing only once per process.
//
// Why: DDP_SKIP_UNLESS_GPU() asks CUDA in a forked child on every call. These
// tests use CUDA in the test process itself, and CUDA is not fork-safe: once
// the first test has created a context, a child forked for the next test's
// probe cannot use CUDA, and would report "no GPU" on a machine that has one.
// Probing once, before the first CUDA call, gives every test the same answer.
#pragma once

#include <string>

#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::cuda::testing {

inline int CachedVisibleGpus(std::string* reason) {
  static std::string cached_reason;
  static const int count = ::ddp::testing::VisibleGpus(&cached_reason);
  *reason = cached_reason;
  return count;
}

}  // namespace ddp::cuda::testing

#define DDP_CUDA_SKIP_UNLESS_GPU()                                             \
  do {                                                                         \
    std::string ddp_gpu_reason;                                                \
    if (::ddp::cuda::testing::CachedVisibleGpus(&ddp_gpu_reason) == 0) {       \
      if (::ddp::testing::GpuRequired()) {                                     \
        FAIL() << "no GPU but DDP_PITFALLS_REQUIRE_GPU=1: " << ddp_gpu_reason; \
      }                                                                        \
      GTEST_SKIP() << "skipped, no GPU: " << ddp_gpu_reason;                   \
    }                                                                          \
  } while (0)
