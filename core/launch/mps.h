// CUDA MPS for NCCL ranks that share one GPU.
//
// Why: every rank is its own process with its own CUDA context. Without MPS
// the GPU time-slices the contexts, and a step of NCCL's ring needs every
// rank's kernel resident at once, so each collective waits on the scheduler:
// 90-140 ms per 4 KB allreduce at W = 4 on one H100 (2026-11-26,
// results/gpu/h100-2026-11-26/README.md). Under MPS the ranks' kernels share the
// GPU at once (one server context).
//
// DDP_MPS chooses (read once per process):
//   auto (default)  when NCCL ranks share a GPU: use a daemon that is already
//                   reachable (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps,
//                   holds its `control` pipe), else start one if
//                   nvidia-cuda-mps-control is on PATH, else go on without
//                   (and say what that costs);
//   1               the same, but no daemon is an error (ConfigError: exit 2);
//   0               never: CUDA_MPS_PIPE_DIRECTORY is set to kNoDaemonDir,
//                   so the ranks do not attach even to a daemon started
//                   elsewhere (a run that stalls a collective on purpose
//                   faults a shared server: results/gpu/h100-2026-11-27).
// DDP_MPS_CONTROL names the control program instead of PATH's (tests use a
// fake one).
//
// A daemon this process starts runs in the foreground (-f) as its child: `-d`
// would daemonise it, and the orphan would be re-parented to this process (a
// child subreaper) and killed with the next world's leftovers. Its pipe and
// log folders are private to this process and exported
// (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY), so ranks forked
// afterwards attach to it; it is stopped with `quit` at exit (StopMps), and
// the guardian SIGKILLs it if this process dies first. Every NCCL rank that
// shares a GPU appends whether CUDA made it an MPS client
// (cudaDevAttrMpsEnabled) to $DDP_MPS_REPORT (comm/nccl_comm.cc); StopMps
// counts those lines: "N of M rank processes attached".
#pragma once

#include <string>

#include "core/launch/rank_env.h"

namespace ddp::launch {

inline constexpr char kEnvMps[] = "DDP_MPS";
inline constexpr char kEnvMpsControl[] = "DDP_MPS_CONTROL";
inline constexpr char kEnvMpsReport[] = "DDP_MPS_REPORT";
// A path under a file, so no folder of that name can exist: CUDA finds no
// daemon there and runs the process without MPS.
inline constexpr char kNoDaemonDir[] = "/dev/null/no-mps";

enum class MpsState {
  kOff,          // DDP_MPS=0
  kUnavailable,  // no daemon reachable and none could be started
  kReachable,    // a daemon someone else started (not ours to stop)
  kStarted,      // started by this process, stopped at its exit
};

struct MpsStatus {
  MpsState state = MpsState::kOff;
  std::string pipe_dir;  // where ranks find the daemon ("" when none)
  std::string line;      // what was said on stderr
};

// Once per process (later calls return the first answer): decides, starts a
// daemon where DDP_MPS allows it, and prints `line` on stderr. Throws
// ConfigError for a bad DDP_MPS, or when DDP_MPS=1 finds no daemon.
const MpsStatus& EnsureMps(const EnvLookup& env = ProcessEnv);

// Stops the daemon this process started and prints how many rank processes
// attached; nothing otherwise. Idempotent; registered with atexit.
void StopMps();

// For tests: "N of M rank processes attached to CUDA MPS" from a report
// file's lines ("<pid> mps=0|1"); "" when the file is missing or empty.
std::string AttachedSummary(const std::string& report_path);

}  // namespace ddp::launch
