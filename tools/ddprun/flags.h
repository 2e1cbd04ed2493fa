// ddprun's command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddp::ddprun {

inline constexpr char kUsage[] =
    "usage: ddprun --nproc N [options] -- BINARY [ARGS...]\n"
    "\n"
    "Runs N ranks of BINARY on this host with torchrun's variables (RANK,\n"
    "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) plus DDP_RDZV and DDP_RUN_ID.\n"
    "Each output line is prefixed with [rank k]. When one rank fails, all are\n"
    "stopped (fail-fast); ddprun exits with that rank's code (128+signal for a\n"
    "signal), 124 when --timeout expires, 2 for bad usage. The rank blamed is\n"
    "the first whose failure was its own, not one that failed because of it.\n"
    "Nothing a rank starts outlives the run, even if ddprun itself is killed\n"
    "(see core/launch/README.md).\n"
    "\n"
    "options:\n"
    "  --nproc N                 number of ranks, 1 <= N <= 1024 (required)\n"
    "  --rdzv SPEC               rendezvous: a directory or redis://host:port\n"
    "                            (default: a fresh temporary directory)\n"
    "  --run-id ID               key namespace in the store (default: unique per run);\n"
    "                            a run id still in the store is refused, and a run's\n"
    "                            keys are deleted when it ends\n"
    "  --timeout S               overall deadline in seconds (default 3600, at most 604800)\n"
    "  --collective-timeout S    deadline of every collective and store operation\n"
    "                            (DDP_PITFALLS_TIMEOUT; at most 604800)\n"
    "  --backend gloo|nccl       exported as DDP_BACKEND (default: the binary's choice)\n"
    "  --check                   checked mode for every communicator (DDP_PITFALLS_CHECK=1)\n"
    "  --share-gpu               let ranks outnumber GPUs: each rank gets its own\n"
    "                            NCCL_HOSTID (functional runs only; timings are\n"
    "                            not meaningful)\n"
    "  --kill-grace S            seconds between SIGTERM and SIGKILL (default 3, at most 3600)\n"
    "  --help                    this text\n";

inline constexpr int kMaxNproc = 1024;
inline constexpr double kMaxSeconds = 7 * 24 * 3600;  // a week, as DDP_PITFALLS_TIMEOUT
inline constexpr double kMaxKillGrace = 3600;
inline constexpr std::size_t kMaxRunIdLength = 100;

struct Args {
  bool help = false;
  int nproc = 0;
  std::string rdzv;
  std::string run_id;
  double timeout_s = 3600;
  std::string collective_timeout;  // passed through as text, validated as a number
  double collective_timeout_s = 0;  // 0: not given
  std::string backend;
  bool check = false;
  bool share_gpu = false;
  double kill_grace_s = 3;
  std::vector<std::string> command;  // BINARY ARGS...
};

// Throws launch::ConfigError naming the flag and the allowed values.
Args ParseArgs(const std::vector<std::string>& argv);

}  // namespace ddp::ddprun
