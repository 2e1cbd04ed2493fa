// CUDA kernel + NCCL single-rank allreduce on a real GPU; skips without one.
#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "core/testing/gpu.h"
#include "gtest/gtest.h"
#include "third_party/smoke/saxpy.h"

namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define NCCL_OK(expr) ASSERT_EQ((expr), ncclSuccess) << #expr

TEST(CudaNcclSmoke, SaxpyThenSingleRankAllreduce) {
  DDP_SKIP_UNLESS_GPU();
  constexpr std::size_t kN = 1000;
  std::vector<float> x(kN), y(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  CUDA_OK(cudaMalloc(&dx, kN * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, kN * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, x.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy, y.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  ASSERT_EQ(ddp::smoke::Saxpy(2.0f, dx, dy, kN), 0);

  ncclComm_t comm;
  int dev = 0;
  NCCL_OK(ncclCommInitAll(&comm, 1, &dev));
  NCCL_OK(ncclAllReduce(dy, dy, kN, ncclFloat, ncclSum, comm, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(y.data(), dy, kN * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], 2.0f * i + 1.0f) << i;
  ncclCommDestroy(comm);
  cudaFree(dx);
  cudaFree(dy);
}

}  // namespace
