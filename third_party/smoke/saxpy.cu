#include "third_party/smoke/saxpy.h"

#include <cuda_runtime.h>

namespace ddp::smoke {
namespace {

__global__ void SaxpyKernel(float a, const float* x, float* y, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

int Saxpy(float a, const float* x, float* y, std::size_t n) {
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  SaxpyKernel<<<blocks, 256>>>(a, x, y, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace ddp::smoke
