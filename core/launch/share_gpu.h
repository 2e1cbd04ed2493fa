// Whether the ranks of one host share GPUs (NCCL, functional runs only).
//
// NCCL refuses two ranks of one host on one GPU ("Duplicate GPU detected"):
// its duplicate check is keyed on the host hash, so a distinct NCCL_HOSTID
// per rank lets them share it, talking over sockets (slow; never for
// timings). A one-GPU runner needs that for every 4-rank pair, so it is the
// default whenever NCCL ranks outnumber the visible GPUs:
//
//   - DDP_SHARE_GPU=1, or the caller's flag (--share_gpu): share;
//   - DDP_SHARE_GPU=0: never share automatically (a rank past the last GPU
//     then stops with a usage error naming DDP_SHARE_GPU);
//   - otherwise: share when the backend is nccl and 0 < visible GPUs < the
//     host's ranks.
#pragma once

#include <string>

#include "core/launch/rank_env.h"

namespace ddp::launch {

struct ShareGpuDecision {
  bool share = false;
  std::string why;  // for the one line printed when sharing ("" otherwise)
};

// visible_gpus < 0: unknown (no automatic sharing). Throws ConfigError when
// DDP_SHARE_GPU is set to anything but 0 or 1.
ShareGpuDecision DecideShareGpu(const std::string& backend, bool requested, int local_ranks,
                                int visible_gpus, const EnvLookup& env = ProcessEnv);

// CUDA devices a process started now sees (CUDA_VISIBLE_DEVICES applies),
// asked through the driver (libcuda.so.1, dlopen'ed) in a child process:
// CUDA initialised in this process would not survive the ranks' fork(). 0
// when there is no driver or no device. Asked once per process.
int VisibleGpuCount();

}  // namespace ddp::launch
