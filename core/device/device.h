// ddp::device::Device<T>: where a norm layer computes when it is not core/nn's
// Eigen, and where a varlen gather pads, trims and reorders its rows when not
// on the host: memory of its own, the core/cuda norm and varlen kernels' API
// on that memory, and a count of every copy between host and device memory.
//
// Two devices implement it (make_device.h picks one):
//  - CudaDevice (cuda_device.h, built only where CUDA is): cudaMalloc'd
//    memory, the kernels of core/cuda/norm_kernels.h and varlen_kernels.h on
//    one stream;
//  - EmulatedDevice (emulated_device.h): host memory standing in for device
//    memory, and core/cuda/norm_emulation.h, which runs the kernels' own
//    arithmetic in the kernels' order on the host (the kernels' bits), and
//    core/cuda/varlen_emulation.h (the varlen kernels' copies). It
//    copies and counts exactly as the CUDA device does, so the whole device
//    path (layers, collectives on device buffers, copy counts) runs and is
//    tested where there is no GPU.
//
// Calls are ordered: each sees the results of the calls before it. Kernels
// may still run when a call returns (CUDA); Download and Synchronize wait.
// Before another engine reads or writes device memory (an NCCL collective on
// its own stream), call Synchronize. Arguments are checked as core/cuda's host
// wrappers check them (the CUDA device) or not at all (the emulation): the
// layers check theirs first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/cuda/norm_bodies.h"  // NchwShape (no CUDA header)

namespace ddp::device {

using cuda::NchwShape;

// What a copy between host and device memory carries, for the counts.
enum class CopyKind {
  kActivation,  // a layer's input or output: x, y, dy, dx (the Eigen network's hand-over)
  kParameter,   // gamma, beta, running statistics in; parameter gradients, running statistics out
  kStatistic,   // what the host needs to go on: SyncBN's per-rank counts, last_stats(), ReorderByIndex's check
  kPrediction,  // a varlen gather's hand-over: a rank's (index, score, label) rows up, the gathered rows down
};
inline constexpr int kCopyKinds = 4;
const char* ToString(CopyKind k);

struct CopyTally {
  int64_t calls = 0;
  int64_t bytes = 0;
  bool operator==(const CopyTally&) const = default;
};

// Copies by direction and kind. Zero-byte copies are not made and not counted.
struct CopyCount {
  CopyTally h2d[kCopyKinds];
  CopyTally d2h[kCopyKinds];

  CopyTally H2d() const;  // over every kind
  CopyTally D2h() const;
  CopyCount operator-(const CopyCount& earlier) const;
  bool operator==(const CopyCount&) const = default;
};

template <typename T>
class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // "cuda" or "emulated" (what the records call it).
  virtual std::string kind() const = 0;

  virtual T* Allocate(std::size_t n) = 0;
  virtual void Free(T* p) noexcept = 0;

  // Host -> device, n values. The host memory may be reused on return.
  void Upload(T* device_dst, const T* host_src, std::size_t n, CopyKind kind) {
    if (n == 0) return;
    Count(&copies_.h2d[static_cast<int>(kind)], n);
    RawUpload(device_dst, host_src, n);
  }
  // Device -> host, n values, after every call before it; complete on return.
  void Download(T* host_dst, const T* device_src, std::size_t n, CopyKind kind) {
    if (n == 0) return;
    Count(&copies_.d2h[static_cast<int>(kind)], n);
    RawDownload(host_dst, device_src, n);
  }
  // Device -> device (not counted: it never leaves the device): `rows` runs
  // of `width` values, the source's `src_stride` apart, the destination's
  // `dst_stride` apart (cudaMemcpy2D).
  virtual void CopyRows(T* dst, std::size_t dst_stride, const T* src, std::size_t src_stride, std::size_t width,
                        std::size_t rows) = 0;
  // n zeros.
  virtual void Zero(T* p, std::size_t n) = 0;
  // Waits for every call before it.
  virtual void Synchronize() = 0;

  // core/cuda/norm_kernels.h's API on this device's memory (see there).
  virtual void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2) = 0;
  virtual int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels,
                               T* mean, T* m2) = 0;
  virtual void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps,
                               double momentum, T* invstd, T* running_mean, T* running_var) = 0;
  virtual void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd) = 0;
  virtual void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                           const T* beta, T* y) = 0;
  virtual void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd,
                               T* sum_dy, T* sum_dy_xhat) = 0;
  virtual void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd,
                           const T* gamma, const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx) = 0;
  virtual void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta,
                         T* y, T* mean, T* invstd) = 0;
  virtual void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean,
                          const T* invstd, const T* gamma, T* dx, T* dgamma, T* dbeta) = 0;

  // core/cuda/varlen_kernels.h's API on this device's memory (see there):
  // rows of `width` values; every value is copied, never computed on, so
  // the rows arrive bit for bit (NaN payloads and denormals included).
  virtual void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst) = 0;
  virtual void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width,
                        T* out) = 0;
  // `index` is device memory holding m int64_t values. The kernel checks the
  // indices cover [0, n_out) exactly by downloading two 8-byte counters
  // (counted here as one 16-byte statistic download, on both devices) and
  // throws std::runtime_error when they do not.
  void ReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out, T* out) {
    CopyTally& t = copies_.d2h[static_cast<int>(CopyKind::kStatistic)];
    ++t.calls;
    t.bytes += 2 * static_cast<int64_t>(sizeof(int64_t));
    RawReorderByIndex(index, rows, m, width, n_out, out);
  }

  // Every copy so far.
  const CopyCount& copies() const { return copies_; }

  // The time the device spends on the work queued between BeginSpan and
  // EndSpan, summed over the spans ended since the last TakeSpanSeconds. On
  // the CUDA device: a pair of CUDA events recorded on its stream per span
  // (the GPU's clock; launch gaps inside a span count, work queued on other
  // streams, such as an NCCL collective's, does not); the host is not
  // blocked until TakeSpanSeconds, which waits for the last span's end. On
  // the emulation: the host's steady clock between the two calls (its calls
  // complete on return). Spans do not nest: BeginSpan inside a span or
  // EndSpan outside one throws std::logic_error. Why: a benchmark separates
  // the kernels' time from the collectives' between them without a
  // Synchronize ending every span (bench/sync_bn).
  virtual void BeginSpan() = 0;
  virtual void EndSpan() = 0;
  // Seconds over the ended spans (0 if none); they are forgotten. Throws
  // std::logic_error inside an open span.
  virtual double TakeSpanSeconds() = 0;

 protected:
  virtual void RawReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out,
                                 T* out) = 0;
  virtual void RawUpload(T* device_dst, const T* host_src, std::size_t n) = 0;
  virtual void RawDownload(T* host_dst, const T* device_src, std::size_t n) = 0;

 private:
  static void Count(CopyTally* t, std::size_t n) {
    ++t->calls;
    t->bytes += static_cast<int64_t>(n * sizeof(T));
  }
  CopyCount copies_;
};

// A grow-only allocation on a device (a layer's buffers, reused call after
// call). Contents are unspecified after a Reserve that grows it.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(Device<T>* device) : device_(device) {}
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
    if (data_ != nullptr) device_->Free(data_);
  }
  // At least n values (n = 0: whatever is there, possibly nullptr).
  T* Reserve(std::size_t n) {
    if (n > size_) {
      if (data_ != nullptr) device_->Free(data_);
      data_ = nullptr;
      size_ = 0;
      data_ = device_->Allocate(n);
      size_ = n;
    }
    return data_;
  }
  T* get() { return data_; }

 private:
  Device<T>* device_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ddp::device
