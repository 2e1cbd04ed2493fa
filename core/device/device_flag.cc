#include "core/device/device_flag.h"

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace ddp::device {
namespace {

// The values of every placement flag (make_device.h's Placement).
std::vector<std::string> Placements() { return {"auto", "host", "emulated", "cuda"}; }

}  // namespace

void AddDeviceFlag(cli::Flags& flags, std::string* text) {
  flags.Choice("device", text,
               "where the gradient and metric all-reduces run: auto (cuda under --backend nccl, else host), "
               "host (host buffers), emulated (the device path on the host, copies counted), cuda",
               Placements());
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

harness::SharedFlag DeviceFlag(std::string* text) {
  return {[text](cli::Flags& flags) { AddDeviceFlag(flags, text); },
          [text](const harness::CommonFlags& f) { return DeviceFlagError(*text, f.backend); }};
}

harness::SharedFlag PlacementFlag(const std::string& name, const std::string& help,
                                  Placement* placement) {
  auto text = std::make_shared<std::string>("auto");
  const std::string flag = "--" + name;
  return {[=](cli::Flags& flags) {
            flags.Choice(name, text.get(), help, Placements());
          },
          [=](const harness::CommonFlags& f) {
            *placement = ParsePlacement(*text, flag);  // one of Choice's values
            return PlacementError(*placement, f.backend, flag);
          }};
}

}  // namespace ddp::device
