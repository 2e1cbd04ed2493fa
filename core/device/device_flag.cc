#include "core/device/device_flag.h"

#include <exception>

namespace ddp::device {

void AddDeviceFlag(cli::Flags& flags, std::string* text) {
  flags.Choice("device", text,
               "where the gradient and metric all-reduces run: auto (cuda under --backend nccl, else host), "
               "host (host buffers), emulated (the device path on the host, copies counted), cuda",
               {"auto", "host", "emulated", "cuda"});
}

std::string DeviceFlagError(std::string_view text, std::string_view backend) {
  try {
    return PlacementError(ParsePlacement(text, kDeviceFlag), backend, kDeviceFlag);
  } catch (const std::exception& e) {
    return e.what();
  }
}

Placement ResolveDeviceFlag(std::string_view text, std::string_view backend) {
  return Resolve(ParsePlacement(text, kDeviceFlag), backend, kDeviceFlag);
}

}  // namespace ddp::device
