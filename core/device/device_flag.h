// --device: where a pair's whole distributed step keeps the buffers of its
// gradient and metric all-reduces (device_allreduce.h), the same choice for
// every pair that has it: auto (cuda under --backend nccl, else host), host
// (today's host all-reduces; NCCL stages them), emulated (the device path on
// the host: counted copies, Gloo reduces the stand-in buffers), cuda (needs
// --backend nccl). Pairs whose norm layers move call theirs --norm_device
// (make_device.h); the rules are the same.
#pragma once

#include <string>
#include <string_view>

#include "core/cli/flags.h"
#include "core/device/make_device.h"
#include "core/harness/pair_main.h"

namespace ddp::device {

inline constexpr char kDeviceFlag[] = "--device";

// Registers --device (one of auto, host, emulated, cuda) into *text.
void AddDeviceFlag(cli::Flags& flags, std::string* text);
// "" or the usage error (exit 2) of --device `text` with `backend`.
std::string DeviceFlagError(std::string_view text, std::string_view backend);
// The resolved placement of a valid --device `text` with `backend`.
Placement ResolveDeviceFlag(std::string_view text, std::string_view backend);

// --device for a pair's PairSpec::shared_flags: registered after the pair's
// own flags into *text, checked against --backend before the pair's check.
harness::SharedFlag DeviceFlag(std::string* text);

// A pair's own placement flag (--norm_device, --gather_device): the values of
// --device (auto, host, emulated, cuda), its own `help`; once checked against
// --backend, the parsed (unresolved) placement is in *placement.
harness::SharedFlag PlacementFlag(const std::string& name, const std::string& help,
                                  Placement* placement);

}  // namespace ddp::device
