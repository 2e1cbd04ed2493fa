#include "core/launch/share_gpu.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "core/cli/config_error.h"
#include "core/launch/supervise.h"

namespace ddp::launch {

ShareGpuDecision DecideShareGpu(const std::string& backend, bool requested, int local_ranks,
                                int visible_gpus, const EnvLookup& env) {
  const auto var = env(kEnvShareGpu);
  if (var && *var != "0" && *var != "1") {
    throw ConfigError(std::string(kEnvShareGpu) + "='" + *var + "' must be 0 or 1");
  }
  if (requested) return {true, "asked for"};
  if (var && *var == "1") return {true, std::string(kEnvShareGpu) + "=1"};
  if (var || backend != "nccl" || visible_gpus <= 0 || visible_gpus >= local_ranks) return {};
  return {true, std::to_string(local_ranks) + " NCCL ranks on this host, " +
                    std::to_string(visible_gpus) + " GPU" + (visible_gpus == 1 ? "" : "s") +
                    " visible (" + kEnvShareGpu + "=0 turns this off)"};
}

namespace {

// In the child: the driver API's count, printed; nothing when unusable.
int PrintDriverDeviceCount() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 1;
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0) return 1;
  std::printf("%d", n);
  return 0;
}

int AskDriver() {
  SuperviseOptions so;
  so.deadline = std::chrono::seconds(30);
  const RunResult r = Supervise({StartChild(0, PrintDriverDeviceCount)}, so);
  if (!r.all_ok()) return 0;
  return std::atoi(r.ranks[0].stdout_text.c_str());
}

}  // namespace

int VisibleGpuCount() {
  static const int count = AskDriver();
  return count;
}

}  // namespace ddp::launch
