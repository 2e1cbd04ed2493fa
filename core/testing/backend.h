// Which backend a pair test runs on (see pair_test.bzl), and the GPU check
// that the NCCL build of a test starts with.
#pragma once

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

}  // namespace ddp::testing
