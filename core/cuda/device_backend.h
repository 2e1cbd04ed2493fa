// (tests) norm_kernels.h's calls on one CUDA stream, as the backend of
// norm_test_cases.h (norm_kernels_test) and the device side of
// norm_bits_test.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "core/cuda/check.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/norm_kernels.h"

namespace ddp::cuda::testing {

class Stream {
 public:
  Stream() { DDP_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }
  void Sync() const { DDP_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

// norm_test_cases.h's backend: the kernels on one stream.
struct DeviceBackend {
  static constexpr const char* kName = "gpu";
  template <typename T>
  using Buffer = DeviceBuffer<T>;
  Stream stream;

  void Sync() const { stream.Sync(); }
  template <typename T>
  void BnLocalStats(const T* x, NchwShape s, T* mean, T* m2) {
    cuda::BnLocalStats(x, s, mean, m2, stream.get());
  }
  template <typename T>
  int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                       T* m2) {
    return cuda::BnMergeStats(counts, means, m2s, channels, mean, m2, stream.get());
  }
  template <typename T>
  void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                       T* invstd, T* running_mean, T* running_var) {
    cuda::BnFinalizeStats(mean, m2, count, channels, eps, momentum, invstd, running_mean, running_var, stream.get());
  }
  template <typename T>
  void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd) {
    cuda::BnInvstdFromVar(var, channels, eps, invstd, stream.get());
  }
  template <typename T>
  void BnNormalize(const T* x, NchwShape s, const T* mean, const T* invstd, const T* gamma, const T* beta, T* y) {
    cuda::BnNormalize(x, s, mean, invstd, gamma, beta, y, stream.get());
  }
  template <typename T>
  void BnLocalGradSums(const T* dy, const T* x, NchwShape s, const T* mean, const T* invstd, T* sum_dy,
                       T* sum_dy_xhat) {
    cuda::BnLocalGradSums(dy, x, s, mean, invstd, sum_dy, sum_dy_xhat, stream.get());
  }
  template <typename T>
  void BnInputGrad(const T* dy, const T* x, NchwShape s, const T* mean, const T* invstd, const T* gamma,
                   const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx) {
    cuda::BnInputGrad(dy, x, s, mean, invstd, gamma, sum_dy, sum_dy_xhat, count, dx, stream.get());
  }
  template <typename T>
  void GnForward(const T* x, NchwShape s, int64_t groups, double eps, const T* gamma, const T* beta, T* y, T* mean,
                 T* invstd) {
    cuda::GnForward(x, s, groups, eps, gamma, beta, y, mean, invstd, stream.get());
  }
  template <typename T>
  void GnBackward(const T* dy, const T* x, NchwShape s, int64_t groups, const T* mean, const T* invstd,
                  const T* gamma, T* dx, T* dgamma, T* dbeta) {
    cuda::GnBackward(dy, x, s, groups, mean, invstd, gamma, dx, dgamma, dbeta, stream.get());
  }
};

}  // namespace ddp::cuda::testing
