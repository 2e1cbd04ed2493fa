#include "core/device/make_device.h"

#include <stdexcept>

#include "core/cli/config_error.h"
#include "core/device/emulated_device.h"
#ifdef DDP_HAVE_CUDA
#include "core/device/cuda_device.h"
#endif

namespace ddp::device {

const char* ToString(Placement p) {
  switch (p) {
    case Placement::kAuto: return "auto";
    case Placement::kHost: return "host";
    case Placement::kEmulated: return "emulated";
    case Placement::kCuda: return "cuda";
  }
  return "?";
}

Placement ParsePlacement(std::string_view text, std::string_view flag) {
  for (Placement p : {Placement::kAuto, Placement::kHost, Placement::kEmulated, Placement::kCuda}) {
    if (text == ToString(p)) return p;
  }
  throw launch::ConfigError(std::string(flag) + " must be one of auto, host, emulated, cuda (got '" +
                         std::string(text) + "')");
}

std::string PlacementError(Placement p, std::string_view backend, std::string_view flag) {
  if (p == Placement::kCuda && !backend.empty() && backend != "nccl") {
    return std::string(flag) + " cuda needs --backend nccl (got '" + std::string(backend) +
           "': its collectives read host memory only); use host or emulated";
  }
  return "";
}

Placement Resolve(Placement p, std::string_view backend, std::string_view flag) {
  if (const std::string why = PlacementError(p, backend, flag); !why.empty()) throw launch::ConfigError(why);
  if (p != Placement::kAuto) return p;
  return backend == "nccl" ? Placement::kCuda : Placement::kHost;
}

template <typename T>
std::unique_ptr<Device<T>> MakeDevice(Placement resolved) {
  switch (resolved) {
    case Placement::kAuto: throw std::invalid_argument("MakeDevice: resolve the placement first");
    case Placement::kHost: return nullptr;
    case Placement::kEmulated: return std::make_unique<EmulatedDevice<T>>();
    case Placement::kCuda:
#ifdef DDP_HAVE_CUDA
      return MakeCudaDevice<T>();
#else
      throw launch::ConfigError("--norm_device cuda: this build has no CUDA (use host or emulated)");
#endif
  }
  return nullptr;
}

template std::unique_ptr<Device<float>> MakeDevice<float>(Placement);
template std::unique_ptr<Device<double>> MakeDevice<double>(Placement);

}  // namespace ddp::device
