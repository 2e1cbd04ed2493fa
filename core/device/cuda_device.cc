#include "core/device/cuda_device.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cli/config_error.h"
#include "core/cuda/check.h"
#include "core/cuda/norm_kernels.h"
#include "core/cuda/varlen_kernels.h"

namespace ddp::device {
namespace {

template <typename T>
class CudaDevice final : public Device<T> {
 public:
  CudaDevice() {
    DDP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~CudaDevice() override {
    // A destructor cannot throw; a failure here means the context is broken.
    cudaStreamSynchronize(stream_);
    for (auto& [begin, end] : events_) {
      cudaEventDestroy(begin);
      cudaEventDestroy(end);
    }
    cudaStreamDestroy(stream_);
  }

  std::string kind() const override { return "cuda"; }

  T* Allocate(std::size_t n) override {
    if (n == 0) return nullptr;
    T* p = nullptr;
    DDP_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)));
    return p;
  }
  void Free(T* p) noexcept override {
    if (p == nullptr) return;
    // Work queued on the stream may still read p; cudaFree does not wait for
    // a non-blocking stream.
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }

  void CopyRows(T* dst, std::size_t dst_stride, const T* src, std::size_t src_stride, std::size_t width,
                std::size_t rows) override {
    if (width == 0 || rows == 0) return;
    DDP_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_stride * sizeof(T), src, src_stride * sizeof(T), width * sizeof(T),
                                     rows, cudaMemcpyDeviceToDevice, stream_));
  }
  void Zero(T* p, std::size_t n) override {
    if (n == 0) return;
    DDP_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(T), stream_));  // all bits 0: +0.0
  }
  void Synchronize() override { DDP_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  // One event pair per span since the last TakeSpanSeconds, kept for reuse:
  // recording never allocates after the first step of a loop.
  void BeginSpan() override {
    if (open_) throw std::logic_error("Device::BeginSpan inside an open span");
    if (spans_ == events_.size()) {
      cudaEvent_t begin = nullptr, end = nullptr;
      DDP_CUDA_CHECK(cudaEventCreate(&begin));
      DDP_CUDA_CHECK(cudaEventCreate(&end));
      events_.emplace_back(begin, end);
    }
    DDP_CUDA_CHECK(cudaEventRecord(events_[spans_].first, stream_));
    open_ = true;
  }
  void EndSpan() override {
    if (!open_) throw std::logic_error("Device::EndSpan without BeginSpan");
    DDP_CUDA_CHECK(cudaEventRecord(events_[spans_].second, stream_));
    open_ = false;
    ++spans_;
  }
  double TakeSpanSeconds() override {
    if (open_) throw std::logic_error("Device::TakeSpanSeconds inside an open span");
    if (spans_ == 0) return 0;
    // Spans are recorded in stream order: the last one's end is the last event.
    DDP_CUDA_CHECK(cudaEventSynchronize(events_[spans_ - 1].second));
    double s = 0;
    for (std::size_t i = 0; i < spans_; ++i) {
      float ms = 0;
      DDP_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second));
      s += ms * 1e-3;
    }
    spans_ = 0;
    return s;
  }

  void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2) override {
    cuda::BnLocalStats(x, shape, mean, m2, stream_);
  }
  int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                       T* m2) override {
    return cuda::BnMergeStats(counts, means, m2s, channels, mean, m2, stream_);
  }
  void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                       T* invstd, T* running_mean, T* running_var) override {
    cuda::BnFinalizeStats(mean, m2, count, channels, eps, momentum, invstd, running_mean, running_var, stream_);
  }
  void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd) override {
    cuda::BnInvstdFromVar(var, channels, eps, invstd, stream_);
  }
  void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma, const T* beta,
                   T* y) override {
    cuda::BnNormalize(x, shape, mean, invstd, gamma, beta, y, stream_);
  }
  void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, T* sum_dy,
                       T* sum_dy_xhat) override {
    cuda::BnLocalGradSums(dy, x, shape, mean, invstd, sum_dy, sum_dy_xhat, stream_);
  }
  void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                   const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx) override {
    cuda::BnInputGrad(dy, x, shape, mean, invstd, gamma, sum_dy, sum_dy_xhat, count, dx, stream_);
  }
  void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta, T* y,
                 T* mean, T* invstd) override {
    cuda::GnForward(x, shape, groups, eps, gamma, beta, y, mean, invstd, stream_);
  }
  void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean, const T* invstd,
                  const T* gamma, T* dx, T* dgamma, T* dbeta) override {
    cuda::GnBackward(dy, x, shape, groups, mean, invstd, gamma, dx, dgamma, dbeta, stream_);
  }

  void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst) override {
    cuda::PadRows(src, rows, max_rows, width, pad, dst, stream_);
  }
  void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width,
                T* out) override {
    cuda::TrimRows(gathered, counts, max_rows, width, out, stream_);
  }

 protected:
  void RawReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out,
                         T* out) override {
    cuda::ReorderByIndex(index, rows, m, width, n_out, out, stream_);  // synchronises the stream
  }
  void RawUpload(T* device_dst, const T* host_src, std::size_t n) override {
    DDP_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, n * sizeof(T), cudaMemcpyHostToDevice, stream_));
  }
  void RawDownload(T* host_dst, const T* device_src, std::size_t n) override {
    DDP_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, n * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    DDP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
  std::size_t spans_ = 0;  // ended since the last TakeSpanSeconds
  bool open_ = false;
};

}  // namespace

template <typename T>
std::unique_ptr<Device<T>> MakeCudaDevice(std::string_view flag) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    const std::string f(flag);
    throw launch::ConfigError(f + " cuda needs a GPU, but none is usable here (" +
                              (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + "): use " + f +
                              " host or emulated");
  }
  return std::make_unique<CudaDevice<T>>();
}

template std::unique_ptr<Device<float>> MakeCudaDevice<float>(std::string_view);
template std::unique_ptr<Device<double>> MakeCudaDevice<double>(std::string_view);

}  // namespace ddp::device
