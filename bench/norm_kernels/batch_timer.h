// CUDA-event timing of back-to-back calls: a batch is `calls` enqueues of
// the same work between two events on one stream, so the GPU runs them one
// after another and the events' difference over `calls` is the time per call
// as a training loop sees it (launch gaps included where a call is shorter
// than the host takes to launch it). A batch long enough that the events'
// resolution (about 0.5 us, cudaEventElapsedTime) is small beside it is
// CallsFor's job.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

namespace ddp::bench::norm_kernels {

class BatchTimer {
 public:
  explicit BatchTimer(cudaStream_t stream);
  ~BatchTimer();
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;

  // Seconds per call over one batch of `calls` calls of `enqueue` (which
  // only enqueues on the stream); waits for the batch to finish.
  double PerCall(const std::function<void()>& enqueue, int64_t calls);

  // Calls per batch for a batch of about `batch_s` seconds: two untimed
  // batches of one call first (the first call of a kernel loads its module
  // and grows the memory pool), then a timed batch of 3; at least 1, at most
  // `max_calls`.
  int64_t CallsFor(const std::function<void()>& enqueue, double batch_s, int64_t max_calls);

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace ddp::bench::norm_kernels
