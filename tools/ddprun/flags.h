// ddprun's command line.
#pragma once

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
    "signal), 124 when --timeout expires, 2 for bad usage.\n"
    "\n"
    "options:\n"
    "  --nproc N                 number of ranks, N >= 1 (required)\n"
    "  --rdzv SPEC               rendezvous: a directory or redis://host:port\n"
    "                            (default: a fresh temporary directory)\n"
    "  --run-id ID               key namespace in the store (default: unique per run)\n"
    "  --timeout S               overall deadline in seconds (default 3600)\n"
    "  --collective-timeout S    deadline of every collective (DDP_PITFALLS_TIMEOUT)\n"
    "  --backend gloo|nccl       exported as DDP_BACKEND (default: the binary's choice)\n"
    "  --check                   checked mode for every communicator (DDP_PITFALLS_CHECK=1)\n"
    "  --share-gpu               let ranks outnumber GPUs: each rank gets its own\n"
    "                            NCCL_HOSTID (functional runs only; timings are\n"
    "                            not meaningful)\n"
    "  --kill-grace S            seconds between SIGTERM and SIGKILL (default 3)\n"
    "  --help                    this text\n";

struct Args {
  bool help = false;
  int nproc = 0;
  std::string rdzv;
  std::string run_id;
  double timeout_s = 3600;
  std::string collective_timeout;  // passed through as text, validated as a number
  std::string backend;
  bool check = false;
  bool share_gpu = false;
  double kill_grace_s = 3;
  std::vector<std::string> command;  // BINARY ARGS...
};

// Throws launch::ConfigError naming the flag and the allowed values.
Args ParseArgs(const std::vector<std::string>& argv);

}  // namespace ddp::ddprun
