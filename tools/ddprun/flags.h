// ddprun's command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ddp::ddprun {

inline constexpr char kUsage[] =
    "usage: ddprun --nproc N [options] -- BINARY [ARGS...]\n"
    "       ddprun --nnodes M --node_rank K --rdzv redis://HOST:PORT --nproc N\n"
    "              [options] -- BINARY [ARGS...]     (on each of M hosts)\n"
    "\n"
    "Runs N ranks of BINARY on this host with torchrun's variables (RANK,\n"
    "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK) plus DDP_RDZV and\n"
    "DDP_RUN_ID. With --nnodes M, run the same command on M hosts (no\n"
    "scheduler needed), each with its own --node_rank: host K runs the global\n"
    "ranks K*N .. K*N+N-1 of M*N, and all meet in the --rdzv store. Set\n"
    "DDP_GLOO_ADDR to an address of each host that the others reach (default:\n"
    "the host's name).\n"
    "Each output line is prefixed with [rank k]. When one rank fails, all are\n"
    "stopped (fail-fast); ddprun exits with that rank's code (128+signal for a\n"
    "signal), 124 when --timeout expires, 2 for bad usage. The rank blamed is\n"
    "the first whose failure was its own, not one that failed because of it.\n"
    "Nothing a rank starts outlives the run, even if ddprun itself is killed\n"
    "(see core/launch/README.md).\n"
    "\n"
    "options:\n"
    "  --nproc N                 ranks on this host, 1 <= N <= 1024 (required)\n"
    "  --nnodes M                hosts in the run, 1 <= M <= 1024 (default 1); M > 1\n"
    "                            needs --node_rank and --rdzv\n"
    "  --node_rank K             this host's index, 0 <= K < M (also --node-rank)\n"
    "  --rdzv SPEC               rendezvous: a directory or redis://host:port\n"
    "                            (default: a fresh temporary directory; with\n"
    "                            --nnodes > 1: required, redis:// or a shared directory)\n"
    "  --run-id ID               key namespace in the store (default: unique per run;\n"
    "                            with --nnodes > 1, 'ddprun', the same on every host);\n"
    "                            a run id (a host's part of it, with --nnodes) still in\n"
    "                            the store is refused, and the last host to end deletes\n"
    "                            the run's keys\n"
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
inline constexpr int kMaxNnodes = 1024;
inline constexpr double kMaxSeconds = 7 * 24 * 3600;  // a week, as DDP_PITFALLS_TIMEOUT
inline constexpr double kMaxKillGrace = 3600;
inline constexpr std::size_t kMaxRunIdLength = 100;

struct Args {
  bool help = false;
  int nproc = 0;
  int nnodes = 1;
  int node_rank = 0;
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
