#include <cstring>
#include <new>

#include "bench/padding/memory.h"
#include "core/device/steady_spans.h"

namespace ddp::bench {
namespace {

class Host final : public Memory {
 public:
  double* Alloc(std::size_t n) override { return n == 0 ? nullptr : new double[n]; }
  void Free(double* p) override { delete[] p; }
  void Copy(double* dst, const double* src, std::size_t n) override {
    if (n > 0) std::memcpy(dst, src, n * sizeof(double));
  }
  void Zero(double* dst, std::size_t n) override {
    if (n > 0) std::memset(dst, 0, n * sizeof(double));
  }
  void Pad(double* dst, const double* src, std::size_t n, std::size_t max) override {
    Copy(dst, src, n);
    Zero(dst + n, max - n);
  }
  void Trim(double* out, const double* blocks, std::span<const std::int64_t> counts,
            std::size_t stride) override {
    for (std::size_t r = 0; r < counts.size(); ++r) {
      const std::size_t n = static_cast<std::size_t>(counts[r]);
      Copy(out, blocks + r * stride, n);
      out += n;
    }
  }
  void Upload(double* dst, const double* host, std::size_t n) override { Copy(dst, host, n); }
  void Download(double* host, const double* src, std::size_t n) override { Copy(host, src, n); }
  void Sync() override {}
  void BeginSpan() override { spans_.Begin(); }
  void EndSpan() override { spans_.End(); }
  double TakeSpanSeconds() override { return spans_.Take(); }

 private:
  device::SteadySpans spans_;
};

}  // namespace

std::unique_ptr<Memory> HostMemory() { return std::make_unique<Host>(); }

}  // namespace ddp::bench
