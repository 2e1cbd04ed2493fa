// A one-kernel CUDA library, to prove nvcc objects link into cc_* targets.
#pragma once

#include <cstddef>

namespace ddp::smoke {

// y = a * x + y on device pointers; returns the cudaError_t of the launch.
int Saxpy(float a, const float* x, float* y, std::size_t n);

}  // namespace ddp::smoke
