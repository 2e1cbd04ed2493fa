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

  void CopyFrom(const std::vector<T>& host) {
    if (host.size() != size_) throw std::invalid_argument("DeviceBuffer::CopyFrom: size mismatch");
    if (size_ > 0) DDP_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    if (size_ > 0) DDP_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // All bytes 0xFF: a NaN in float and double, -1 in integers. An output
  // element a kernel forgets to write stays NaN and fails the comparison.
  void Poison() {
    if (size_ > 0) DDP_CUDA_CHECK(cudaMemset(data_, 0xFF, size_ * sizeof(T)));
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ddp::cuda
