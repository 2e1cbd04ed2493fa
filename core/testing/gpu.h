// Deciding whether a gpu-tagged test can run here.
#pragma once

#include <string>

#include "gtest/gtest.h"

namespace ddp::testing {

// Number of visible CUDA devices; 0 with `reason` filled when there are none.
// Probed once per process, in a child, so this process can still fork
// CUDA-using ranks and later tests get the same answer.
int VisibleGpus(std::string* reason);

// True when DDP_PITFALLS_REQUIRE_GPU=1: a missing GPU must fail, not skip.
bool GpuRequired();

// True when `ranks` NCCL ranks spawned on this host would share GPUs: the
// launcher's own rule (core/launch/share_gpu.h: DDP_SHARE_GPU, else fewer
// visible GPUs than ranks) with VisibleGpus() as the count. False without
// a GPU (the test skips anyway).
bool RanksShareGpu(int ranks);

}  // namespace ddp::testing

// Skips the test with the reason printed, or fails it under --config=gpu.
#define DDP_SKIP_UNLESS_GPU()                                                \
  do {                                                                       \
    std::string ddp_gpu_reason;                                              \
    if (::ddp::testing::VisibleGpus(&ddp_gpu_reason) == 0) {                 \
      if (::ddp::testing::GpuRequired()) {                                   \
        FAIL() << "no GPU but DDP_PITFALLS_REQUIRE_GPU=1: " << ddp_gpu_reason; \
      }                                                                      \
      GTEST_SKIP() << "skipped, no GPU: " << ddp_gpu_reason;                 \
    }                                                                        \
  } while (0)
