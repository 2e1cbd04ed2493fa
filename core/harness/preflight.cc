#include "core/harness/preflight.h"

#include <cstdio>

#include "core/comm/make_comm.h"
#include "core/env/report.h"
#include "core/launch/supervise.h"

namespace ddp::harness {

std::string BackendProblem(const std::string& backend) {
  if (backend != "nccl") return "";
  bool built = false;
  for (const auto& b : comm::AvailableBackends()) built |= b == "nccl";
  if (!built) {
    return "--backend nccl: this binary was built without CUDA/NCCL (they were not found at "
           "build time): use --backend gloo";
  }
  auto probe = launch::StartChild(0, [] {
    const env::GpuProbe p = env::ProbeGpus();
    if (p.gpus.empty()) {
      std::printf("no usable GPU here (%s)", p.why_no_gpu.c_str());
      return 1;
    }
    if (p.nccl_runtime.rfind("not loadable", 0) == 0) {
      std::printf("libnccl is %s", p.nccl_runtime.c_str());
      return 1;
    }
    return 0;
  });
  launch::SuperviseOptions so;
  so.deadline = std::chrono::seconds(60);
  const launch::RunResult r = launch::Supervise({probe}, so);
  if (r.all_ok()) return "";
  const std::string why = r.ranks[0].stdout_text.empty()
                              ? "the GPU probe failed: " + r.ranks[0].Describe()
                              : r.ranks[0].stdout_text;
  return "--backend nccl: " + why + ": use --backend gloo";
}

}  // namespace ddp::harness
