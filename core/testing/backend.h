// Which backend a pair test runs on (see pair_test.bzl), the GPU check
// that the NCCL build of a test starts with, and the sizes it runs at.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

#ifdef DDP_TEST_BACKEND_NCCL
#include "core/testing/gpu.h"
#define DDP_TEST_BACKEND "nccl"
// Skips (or, under --config=gpu, fails) when there is no GPU.
#define DDP_REQUIRE_BACKEND() DDP_SKIP_UNLESS_GPU()
#else
#define DDP_TEST_BACKEND "gloo"
#define DDP_REQUIRE_BACKEND() \
  do {                        \
  } while (0)
#endif

namespace ddp::testing {

inline std::string TestBackend() { return DDP_TEST_BACKEND; }

// 1: every pair test's shared-GPU sizes on any build (to run them on Gloo,
// where they are checked before a GPU runner sees them); 0: the full sizes
// even where ranks share a GPU (with CUDA MPS, say, when they are fast).
inline constexpr char kEnvSharedGpuSizes[] = "DDP_TEST_SHARED_GPU_SIZES";

// True when this test should run its shared-GPU sizes: the NCCL build where
// NCCL ranks of a world of `max_ranks` (the test's largest) would share GPUs
// (each rank its own CUDA context, time-sliced: a world's start-up costs
// seconds and each collective tens of milliseconds; core/testing/README.md),
// unless DDP_TEST_SHARED_GPU_SIZES says 1 or 0. The Gloo build runs its full
// sizes.
inline bool SharedGpuSizes(int max_ranks) {
  const char* forced = std::getenv(kEnvSharedGpuSizes);
  if (forced != nullptr && std::strcmp(forced, "1") == 0) return true;
  if (forced != nullptr && std::strcmp(forced, "0") == 0) return false;
#ifdef DDP_TEST_BACKEND_NCCL
  return RanksShareGpu(max_ranks);
#else
  (void)max_ranks;
  return false;
#endif
}

// The one line on stderr that tells a log reader this case does not run its
// full sizes, and what it cut.
inline void SayShared(const char* what, const char* cut) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::fprintf(stderr, "[shared GPU] %s.%s %s (%s backend): %s\n",
               test != nullptr ? test->test_suite_name() : "?",
               test != nullptr ? test->name() : "?", what, DDP_TEST_BACKEND, cut);
}

// A test's sizes in one place: `full`, or `shared` where SharedGpuSizes(
// max_ranks), said on stderr with what `cut`.
template <typename Sizes>
Sizes PickSizes(int max_ranks, const Sizes& full, const Sizes& shared, const char* cut) {
  if (!SharedGpuSizes(max_ranks)) return full;
  SayShared("runs its shared-GPU sizes", cut);
  return shared;
}

}  // namespace ddp::testing

// Skips the current case where the shared-GPU sizes apply (a case the Gloo
// twin still runs), saying so on stderr and in the skip message with `why`.
#define DDP_SKIP_IF_SHARED_GPU(max_ranks, why)                                \
  do {                                                                        \
    if (::ddp::testing::SharedGpuSizes(max_ranks)) {                          \
      ::ddp::testing::SayShared("is skipped at its shared-GPU sizes", why);   \
      GTEST_SKIP() << "shared GPU: " << why;                                  \
    }                                                                         \
  } while (0)
