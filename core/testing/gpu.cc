#include "core/testing/gpu.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ddp::testing {

int VisibleGpus(std::string* reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    // Printed so the test log says why, even when the summary only says PASSED.
    std::fprintf(stderr, "[gpu] %s\n", reason->c_str());
    return 0;
  }
  if (count == 0) *reason = "cudaGetDeviceCount returned 0 devices";
  return count;
}

bool GpuRequired() {
  const char* v = std::getenv("DDP_PITFALLS_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace ddp::testing
