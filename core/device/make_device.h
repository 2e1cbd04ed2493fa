// Where the norm layers of a model compute (--norm_device), or a varlen
// gather pads, trims and reorders (--gather_device): the one choice every
// pair makes the same way.
//
//   auto:     the GPU (CudaDevice) when the communicator's backend is nccl,
//             else the host (core/nn's Eigen layers, no device at all);
//   host:     core/nn's Eigen layers (with nccl: every collective's buffers
//             are host memory the Comm stages through the GPU);
//   emulated: EmulatedDevice: the device path, kernels' arithmetic included,
//             on the host (tests, and Gloo runs that check the device path);
//   cuda:     CudaDevice (needs a build with CUDA and a GPU).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/device/device.h"

namespace ddp::device {

enum class Placement { kAuto, kHost, kEmulated, kCuda };

const char* ToString(Placement p);
// "auto", "host", "emulated", "cuda"; throws launch::ConfigError naming `flag`
// and the allowed values otherwise.
Placement ParsePlacement(std::string_view text, std::string_view flag = "--norm_device");
// "" or why `p` cannot run with `backend` ("" = no communicator): kCuda
// needs nccl, since Gloo's collectives cannot read device memory. The
// message names `flag` (--norm_device, --gather_device, or --device for
// pairs whose gradient and metric all-reduces move to the device).
std::string PlacementError(Placement p, std::string_view backend, std::string_view flag = "--norm_device");
// kAuto -> kCuda for backend "nccl", else kHost; the others stay. Throws
// launch::ConfigError with PlacementError's message.
Placement Resolve(Placement p, std::string_view backend, std::string_view flag = "--norm_device");

// The device of a resolved placement: nullptr for kHost. kCuda in a build
// without CUDA or with no usable GPU: launch::ConfigError naming `flag`.
// float and double.
template <typename T>
std::unique_ptr<Device<T>> MakeDevice(Placement resolved, std::string_view flag = "--norm_device");

}  // namespace ddp::device
