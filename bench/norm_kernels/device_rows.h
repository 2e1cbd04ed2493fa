// One shape's device-resident buffers for one dtype, and each row of
// traffic.h as the calls of core/cuda/norm_kernels.h it makes. Inputs are
// deterministic (seeded per shape) and the forward's statistics and the
// backward's sums are computed once at construction, so every row, run
// alone and over and over, works on the values a training step would give
// it. Every CUDA status is checked (core/cuda/check.h: CudaError).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "bench/norm_kernels/traffic.h"

namespace ddp::bench::norm_kernels {

class DeviceRows {
 public:
  virtual ~DeviceRows() = default;
  // Enqueues one call of row `r` on the stream given at construction (no
  // synchronisation).
  virtual void Enqueue(Row r) = 0;
};

// dtype "float" or "double"; allocates and fills on `stream`, synchronised
// on return.
std::unique_ptr<DeviceRows> MakeDeviceRows(const Shape& shape, const std::string& dtype, cudaStream_t stream);

}  // namespace ddp::bench::norm_kernels
