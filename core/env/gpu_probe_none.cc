// Built where CUDA was absent at configure time.
#include "cuda_info.h"
#include "core/env/report.h"

namespace ddp::env {

GpuProbe ProbeGpus() {
  GpuProbe p;
  p.why_no_gpu = std::string("not built with CUDA: ") + DDP_CUDA_REASON;
  return p;
}

}  // namespace ddp::env
