// The device path without a GPU: host memory stands in for device memory,
// and core/cuda/norm_emulation.h computes what the kernels compute, bit for
// bit (the kernels' functors in the kernels' reduction order, with fma), and
// core/cuda/varlen_emulation.h the varlen kernels' copies.
// Uploads and downloads are real copies between distinct allocations and are
// counted as the CUDA device counts them, so the layers cannot read host data
// they did not upload. A Gloo communicator takes its buffers as they are.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "core/cuda/norm_emulation.h"
#include "core/cuda/varlen_emulation.h"
#include "core/device/device.h"
#include "core/device/steady_spans.h"

namespace ddp::device {

template <typename T>
class EmulatedDevice final : public Device<T> {
 public:
  std::string kind() const override { return "emulated"; }

  T* Allocate(std::size_t n) override { return n == 0 ? nullptr : new T[n]; }
  void Free(T* p) noexcept override { delete[] p; }

  void CopyRows(T* dst, std::size_t dst_stride, const T* src, std::size_t src_stride, std::size_t width,
                std::size_t rows) override {
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, width * sizeof(T));
  }
  void Zero(T* p, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) p[i] = T(0);
  }
  void Synchronize() override {}

  void BeginSpan() override { spans_.Begin(); }
  void EndSpan() override { spans_.End(); }
  double TakeSpanSeconds() override { return spans_.Take(); }

  void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2) override {
    cuda::emulate::BnLocalStats(x, shape, mean, m2);
  }
  int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                       T* m2) override {
    return cuda::emulate::BnMergeStats(counts, means, m2s, channels, mean, m2);
  }
  void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                       T* invstd, T* running_mean, T* running_var) override {
    cuda::emulate::BnFinalizeStats(mean, m2, count, channels, eps, momentum, invstd, running_mean, running_var);
  }
  void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd) override {
    cuda::emulate::BnInvstdFromVar(var, channels, eps, invstd);
  }
  void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma, const T* beta,
                   T* y) override {
    cuda::emulate::BnNormalize(x, shape, mean, invstd, gamma, beta, y);
  }
  void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, T* sum_dy,
                       T* sum_dy_xhat) override {
    cuda::emulate::BnLocalGradSums(dy, x, shape, mean, invstd, sum_dy, sum_dy_xhat);
  }
  void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                   const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx) override {
    cuda::emulate::BnInputGrad(dy, x, shape, mean, invstd, gamma, sum_dy, sum_dy_xhat, count, dx);
  }
  void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta, T* y,
                 T* mean, T* invstd) override {
    cuda::emulate::GnForward(x, shape, groups, eps, gamma, beta, y, mean, invstd);
  }
  void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean, const T* invstd,
                  const T* gamma, T* dx, T* dgamma, T* dbeta) override {
    cuda::emulate::GnBackward(dy, x, shape, groups, mean, invstd, gamma, dx, dgamma, dbeta);
  }

  void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst) override {
    cuda::emulate::PadRows(src, rows, max_rows, width, pad, dst);
  }
  void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width,
                T* out) override {
    cuda::emulate::TrimRows(gathered, counts, max_rows, width, out);
  }

 protected:
  void RawReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out,
                         T* out) override {
    cuda::emulate::ReorderByIndex(index, rows, m, width, n_out, out);
  }
  void RawUpload(T* device_dst, const T* host_src, std::size_t n) override {
    std::memcpy(device_dst, host_src, n * sizeof(T));
  }
  void RawDownload(T* host_dst, const T* device_src, std::size_t n) override {
    std::memcpy(host_dst, device_src, n * sizeof(T));
  }

 private:
  SteadySpans spans_;
};

}  // namespace ddp::device
