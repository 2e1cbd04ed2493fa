#include <cstring>
#include <new>

#include "bench/padding/memory.h"

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
  void Upload(double* dst, const double* host, std::size_t n) override { Copy(dst, host, n); }
  void Download(double* host, const double* src, std::size_t n) override { Copy(host, src, n); }
  void Sync() override {}
};

}  // namespace

std::unique_ptr<Memory> HostMemory() { return std::make_unique<Host>(); }

}  // namespace ddp::bench
