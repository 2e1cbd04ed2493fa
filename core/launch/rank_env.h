// Who this process is in a distributed run, read from torchrun's variables.
//
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE are what torchrun (and
// Slurm/MPI wrappers that mimic it) export; DDP_RDZV names the rendezvous
// store (a directory, or redis://host:port) and DDP_RUN_ID keeps the keys of
// two runs sharing one store apart (like torchrun's --rdzv_id).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ddp::launch {

inline constexpr char kEnvRank[] = "RANK";
inline constexpr char kEnvWorldSize[] = "WORLD_SIZE";
inline constexpr char kEnvLocalRank[] = "LOCAL_RANK";
inline constexpr char kEnvLocalWorldSize[] = "LOCAL_WORLD_SIZE";
inline constexpr char kEnvRdzv[] = "DDP_RDZV";
inline constexpr char kEnvRunId[] = "DDP_RUN_ID";
inline constexpr char kEnvBackend[] = "DDP_BACKEND";
// Set by `ddprun --share-gpu` (and SpawnOptions::share_gpu): ranks may share
// one GPU, each with its own NCCL_HOSTID. Functional runs only.
inline constexpr char kEnvShareGpu[] = "DDP_SHARE_GPU";

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string rdzv;            // directory or redis://host:port
  std::string run_id = "run";  // key namespace inside the store
  std::string backend;         // empty: the caller's default
  bool share_gpu = false;

  // Throws ConfigError naming the offending field (W < 1, rank >= W, ...).
  void Validate() const;
};

// Reads a variable; the default reads the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> ProcessEnv(const std::string& name);

// True when RANK and WORLD_SIZE are set: this process is one rank started by a
// launcher (ddprun, torchrun, srun) rather than a binary that should spawn its
// own ranks.
bool LaunchedAsRank(const EnvLookup& env = ProcessEnv);

// Parses and validates the variables; throws ConfigError (e.g. "RANK=4 must
// be < WORLD_SIZE=2"). A missing DDP_RDZV is an error: ranks that cannot
// meet would otherwise hang.
RankEnv RankEnvFromEnvironment(const EnvLookup& env = ProcessEnv);

// Parses a non-negative decimal int; throws ConfigError naming `what`.
int ParseInt(const std::string& text, const std::string& what);

}  // namespace ddp::launch
