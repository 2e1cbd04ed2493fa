// Who this process is in a distributed run, read from what the launcher
// exported, with no flags:
//
//  - torchrun, ddprun (and MPI wrappers that mimic them): RANK, WORLD_SIZE,
//    LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node);
//  - SLURM's srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID,
//    and the tasks on this node from SLURM_STEP_TASKS_PER_NODE ("2(x3),1").
//    Only inside a job step (SLURM_STEP_ID set): a batch script also carries
//    SLURM_PROCID=0 and the allocation's SLURM_NTASKS, and a binary started
//    there without srun must spawn its own ranks, not wait for N-1 peers.
//    RANK/WORLD_SIZE win when both are set (torchrun inside srun).
//
// The rendezvous store is DDP_RDZV (a directory, or redis://host:port) under
// every launcher: torchrun's MASTER_ADDR:MASTER_PORT is PyTorch's own c10d
// TCPStore protocol, which the suite does not speak, so a torchrun rank
// without DDP_RDZV is a usage error that says so. DDP_RUN_ID keeps the keys
// of two runs sharing one store apart (like torchrun's --rdzv_id); by
// default it is the Slurm job and step, or torchrun's TORCHELASTIC_RUN_ID.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ddp::launch {

inline constexpr char kEnvRank[] = "RANK";
inline constexpr char kEnvWorldSize[] = "WORLD_SIZE";
inline constexpr char kEnvLocalRank[] = "LOCAL_RANK";
inline constexpr char kEnvLocalWorldSize[] = "LOCAL_WORLD_SIZE";
inline constexpr char kEnvGroupRank[] = "GROUP_RANK";
inline constexpr char kEnvSlurmProcId[] = "SLURM_PROCID";
inline constexpr char kEnvSlurmNtasks[] = "SLURM_NTASKS";
inline constexpr char kEnvSlurmLocalId[] = "SLURM_LOCALID";
inline constexpr char kEnvSlurmNodeId[] = "SLURM_NODEID";
inline constexpr char kEnvSlurmStepId[] = "SLURM_STEP_ID";
inline constexpr char kEnvSlurmStepTasksPerNode[] = "SLURM_STEP_TASKS_PER_NODE";
inline constexpr char kEnvMasterAddr[] = "MASTER_ADDR";
inline constexpr char kEnvMasterPort[] = "MASTER_PORT";
inline constexpr char kEnvRdzv[] = "DDP_RDZV";
inline constexpr char kEnvRunId[] = "DDP_RUN_ID";
inline constexpr char kEnvBackend[] = "DDP_BACKEND";
// Set by `ddprun --share-gpu` (and SpawnOptions::share_gpu): ranks may share
// one GPU, each with its own NCCL_HOSTID. Functional runs only.
inline constexpr char kEnvShareGpu[] = "DDP_SHARE_GPU";

// Which launcher's variables a RankEnv came from.
enum class Launcher { kTorchrun, kSlurm };

struct RankEnv {
  Launcher launcher = Launcher::kTorchrun;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;           // GROUP_RANK / SLURM_NODEID (0 when not given)
  std::string rdzv;            // directory or redis://host:port
  std::string run_id = "run";  // key namespace inside the store
  std::string backend;         // empty: the caller's default
  bool share_gpu = false;

  // Throws ConfigError naming the offending field (W < 1, rank >= W, ...):
  // ValidateWorld, ValidateRdzv and ValidateRunId below, in that order.
  void Validate() const;
};

// The parts of RankEnv::Validate(), for a caller that holds the values but
// no RankEnv (MakeComm's options). Each throws ConfigError naming the
// variable, as Validate() does.
// W >= 1, 0 <= rank < W, 1 <= local W <= W, 0 <= local rank < local W;
// messages name `launcher`'s variables (RANK, or SLURM_PROCID, ...).
void ValidateWorld(Launcher launcher, int rank, int world_size, int local_rank,
                   int local_world_size);
// DDP_RDZV is not empty.
void ValidateRdzv(const std::string& rdzv);
// DDP_RUN_ID is not empty and has no '/'.
void ValidateRunId(const std::string& run_id);

// Reads a variable; the default reads the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> ProcessEnv(const std::string& name);

// True when RANK or WORLD_SIZE is set (RankEnvFromEnvironment rejects one
// without the other), or SLURM_PROCID and SLURM_NTASKS in a job step: this
// process is one rank started by a launcher (ddprun, torchrun, srun) rather
// than a binary that should spawn its own ranks.
bool LaunchedAsRank(const EnvLookup& env = ProcessEnv);

// Parses and validates the variables; throws ConfigError (e.g. "RANK=4 must
// be < WORLD_SIZE=2"). A missing DDP_RDZV is an error: ranks that cannot
// meet would otherwise hang.
RankEnv RankEnvFromEnvironment(const EnvLookup& env = ProcessEnv);

// The number of tasks on node `node` from SLURM's compressed per-node list
// ("2(x3),1": nodes 0-2 run 2 tasks, node 3 runs 1); throws ConfigError.
int SlurmTasksOnNode(const std::string& list, int node);

}  // namespace ddp::launch
