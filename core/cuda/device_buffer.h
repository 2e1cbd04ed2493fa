// A typed device allocation that frees itself, with the host copies and the
// NaN poisoning the kernel tests use. Every call is status-checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "core/cuda/check.h"

namespace ddp::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size) : size_(size) {
    if (size_ > 0) DDP_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), size_ * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { CopyFrom(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  ~DeviceBuffer() {
    // A destructor cannot throw; a failing cudaFree here means the context is
    // already broken, which the next checked call reports.
    if (data_ != nullptr) cudaFree(data_);
  }

  T* get() { return data_; }
  const T* get() const { return data_; }
  std::size_t size() const { return size_; }

  // Each copy and fill below is queued on `stream` (the default stream when
  // none is given) and complete on return, so the buffer is ready for work
  // on any stream. Without the wait it is not: cudaMemcpy from pageable
  // memory may return before its DMA to the device has landed and cudaMemset
  // of device memory is asynchronous to the host (CUDA runtime API,
  // "API synchronization behavior"), both on the legacy default stream, with
  // which a cudaStreamNonBlocking stream, as the kernel tests use,
  // "should perform no implicit synchronization" (cudaStreamCreateWithFlags).
  void CopyFrom(const std::vector<T>& host, cudaStream_t stream = nullptr) {
    if (host.size() != size_) throw std::invalid_argument("DeviceBuffer::CopyFrom: size mismatch");
    if (size_ == 0) return;
    DDP_CUDA_CHECK(cudaMemcpyAsync(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice, stream));
    DDP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // After the work already queued on `stream`.
  std::vector<T> ToHost(cudaStream_t stream = nullptr) const {
    std::vector<T> host(size_);
    if (size_ == 0) return host;
    DDP_CUDA_CHECK(cudaMemcpyAsync(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost, stream));
    DDP_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }
  // All bytes 0xFF: a NaN in float and double, -1 in integers. An output
  // element a kernel forgets to write stays NaN and fails the comparison.
  void Poison(cudaStream_t stream = nullptr) {
    if (size_ == 0) return;
    DDP_CUDA_CHECK(cudaMemsetAsync(data_, 0xFF, size_ * sizeof(T), stream));
    DDP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ddp::cuda
