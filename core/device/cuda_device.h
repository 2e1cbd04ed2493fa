// The device path on a GPU: cudaMalloc'd memory, core/cuda's norm and varlen kernels
// on one non-blocking stream of the device that is current when it is made
// (with --backend nccl, the GPU the NCCL communicator selected: NcclEngine
// sets it at start-up). Uploads are queued on the stream (from pageable
// memory, so the host buffer may be reused on return); downloads and
// Synchronize wait for the stream. Built only where CUDA is.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/device/device.h"

namespace ddp::device {

// float and double. No usable GPU: launch::ConfigError naming `flag`; CUDA
// failing later: cuda::CudaError.
template <typename T>
std::unique_ptr<Device<T>> MakeCudaDevice(std::string_view flag = "--norm_device");

}  // namespace ddp::device
