// Where a gather's buffers live: host memory (Gloo) or a core/device
// device (NCCL: the GPU; tests: the emulated device). The gathers are
// written once against this interface, so on both backends the timed region
// does the same work: the collectives plus the pad and trim, in the memory
// the engine reads and writes (on a device: core/cuda's varlen kernels, as
// fixes/wrong_all_gather's device gather uses them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/device/device.h"

namespace ddp::bench {

class Memory {
 public:
  virtual ~Memory() = default;
  // float64 elements; Alloc(0) may return nullptr.
  virtual double* Alloc(std::size_t n) = 0;
  virtual void Free(double* p) = 0;
  // Within this memory; may be queued until Sync().
  virtual void Copy(double* dst, const double* src, std::size_t n) = 0;
  virtual void Zero(double* dst, std::size_t n) = 0;
  // dst[0, n) = src[0, n), dst[n, max) = 0 (a pad to the longest share).
  virtual void Pad(double* dst, const double* src, std::size_t n, std::size_t max) = 0;
  // Rank r's counts[r] values from blocks + r * stride, one after another
  // into out (the trim after an equal-count gather).
  virtual void Trim(double* out, const double* blocks, std::span<const std::int64_t> counts,
                    std::size_t stride) = 0;
  // Between this memory and the host; complete on return.
  virtual void Upload(double* dst, const double* host, std::size_t n) = 0;
  virtual void Download(double* host, const double* src, std::size_t n) = 0;
  // Waits for queued copies (a collective must not start before its input is
  // written, nor a gather end before its output is).
  virtual void Sync() = 0;
  // The time of the pad and trim work queued between Begin and End, summed
  // until taken (core/device's spans: CUDA events on a GPU, the steady clock
  // on the host, whose copies complete on return).
  virtual void BeginSpan() = 0;
  virtual void EndSpan() = 0;
  virtual double TakeSpanSeconds() = 0;
};

std::unique_ptr<Memory> HostMemory();

// `device`'s memory, its varlen kernels for Pad and Trim, its spans; uploads
// waited for (a collective on another stream may read them next). Counts
// its copies as kPrediction (the gathered rows' hand-over).
std::unique_ptr<Memory> DeviceMemoryOf(std::unique_ptr<device::Device<double>> device);

// A buffer of n elements in `memory`, freed with it (move-only).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Memory& memory, std::size_t n) : memory_(&memory), data_(memory.Alloc(n)), size_(n) {}
  Buffer(Buffer&& o) noexcept : memory_(o.memory_), data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ != nullptr) memory_->Free(data_);
  }
  double* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Memory* memory_ = nullptr;
  double* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ddp::bench
