#include <memory>
#include <utility>

#include "bench/padding/memory.h"

namespace ddp::bench {
namespace {

// A gather's buffers on a core/device device: rows of one value each, so
// the varlen kernels' row copies are the element copies the host does.
class OnDevice final : public Memory {
 public:
  explicit OnDevice(std::unique_ptr<device::Device<double>> device) : d_(std::move(device)) {}
  double* Alloc(std::size_t n) override { return d_->Allocate(n); }
  void Free(double* p) override { d_->Free(p); }
  void Copy(double* dst, const double* src, std::size_t n) override { d_->CopyRows(dst, n, src, n, n, 1); }
  void Zero(double* dst, std::size_t n) override { d_->Zero(dst, n); }
  void Pad(double* dst, const double* src, std::size_t n, std::size_t max) override {
    d_->PadRows(src, Rows(n), Rows(max), 1, 0.0, dst);
  }
  void Trim(double* out, const double* blocks, std::span<const std::int64_t> counts,
            std::size_t stride) override {
    d_->TrimRows(blocks, counts, Rows(stride), 1, out);
  }
  // Waited for: the device's uploads are queued on its stream, and the next
  // reader may be a collective on the engine's own stream.
  void Upload(double* dst, const double* host, std::size_t n) override {
    d_->Upload(dst, host, n, device::CopyKind::kPrediction);
    d_->Synchronize();
  }
  void Download(double* host, const double* src, std::size_t n) override {
    d_->Download(host, src, n, device::CopyKind::kPrediction);
  }
  void Sync() override { d_->Synchronize(); }
  void BeginSpan() override { d_->BeginSpan(); }
  void EndSpan() override { d_->EndSpan(); }
  double TakeSpanSeconds() override { return d_->TakeSpanSeconds(); }

 private:
  static std::int64_t Rows(std::size_t n) { return static_cast<std::int64_t>(n); }
  std::unique_ptr<device::Device<double>> d_;
};

}  // namespace

std::unique_ptr<Memory> DeviceMemoryOf(std::unique_ptr<device::Device<double>> device) {
  return std::make_unique<OnDevice>(std::move(device));
}

}  // namespace ddp::bench
