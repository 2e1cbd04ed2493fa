// Where a gather's buffers live: host memory (Gloo) or device memory (NCCL).
// The gathers are written once against this interface, so on both backends
// the timed region does the same work: the collectives plus the pad and trim
// copies, in the memory the engine reads and writes.
#pragma once

#include <cstddef>
#include <memory>

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
  // Between this memory and the host; complete on return.
  virtual void Upload(double* dst, const double* host, std::size_t n) = 0;
  virtual void Download(double* host, const double* src, std::size_t n) = 0;
  // Waits for queued copies (a collective must not start before its input is
  // written, nor a gather end before its output is).
  virtual void Sync() = 0;
};

std::unique_ptr<Memory> HostMemory();

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
