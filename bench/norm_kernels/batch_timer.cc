#include "bench/norm_kernels/batch_timer.h"

#include <algorithm>
#include <cmath>

#include "core/cuda/check.h"

namespace ddp::bench::norm_kernels {

BatchTimer::BatchTimer(cudaStream_t stream) : stream_(stream) {
  DDP_CUDA_CHECK(cudaEventCreate(&start_));
  DDP_CUDA_CHECK(cudaEventCreate(&stop_));
}

BatchTimer::~BatchTimer() {
  // Destructors do not throw; a failure here would mean a broken context,
  // which the next checked call reports.
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

double BatchTimer::PerCall(const std::function<void()>& enqueue, int64_t calls) {
  DDP_CUDA_CHECK(cudaEventRecord(start_, stream_));
  for (int64_t i = 0; i < calls; ++i) enqueue();
  DDP_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  DDP_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  DDP_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3 / static_cast<double>(calls);
}

int64_t BatchTimer::CallsFor(const std::function<void()>& enqueue, double batch_s, int64_t max_calls) {
  PerCall(enqueue, 1);
  PerCall(enqueue, 1);
  const double per = std::max(PerCall(enqueue, 3), 1e-9);
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(batch_s / per)), 1, max_calls);
}

}  // namespace ddp::bench::norm_kernels
