#include "core/launch/rank_env.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/cli/config_error.h"

namespace ddp::launch {

void ValidateWorld(Launcher launcher, int rank, int world_size, int local_rank,
                   int local_world_size) {
  // Name the variables this launcher set, not torchrun's.
  const bool slurm = launcher == Launcher::kSlurm;
  const std::string rank_var = slurm ? kEnvSlurmProcId : kEnvRank;
  const std::string world_var = slurm ? kEnvSlurmNtasks : kEnvWorldSize;
  const std::string local_var = slurm ? kEnvSlurmLocalId : kEnvLocalRank;
  const std::string local_world_var =
      slurm ? "the tasks on this node (SLURM_STEP_TASKS_PER_NODE)" : kEnvLocalWorldSize;
  if (world_size < 1) {
    throw ConfigError(world_var + "=" + std::to_string(world_size) + " must be >= 1");
  }
  if (rank < 0 || rank >= world_size) {
    throw ConfigError(rank_var + "=" + std::to_string(rank) + " must be in [0, " + world_var +
                      "=" + std::to_string(world_size) + ")");
  }
  if (local_world_size < 1) {
    throw ConfigError(local_world_var + "=" + std::to_string(local_world_size) + " must be >= 1");
  }
  // More ranks on this host than in the world: the rendezvous would wait
  // for ranks that never come.
  if (local_world_size > world_size) {
    throw ConfigError(local_world_var + "=" + std::to_string(local_world_size) +
                      " must be <= " + world_var + "=" + std::to_string(world_size));
  }
  if (local_rank < 0 || local_rank >= local_world_size) {
    throw ConfigError(local_var + "=" + std::to_string(local_rank) + " must be in [0, " +
                      local_world_var + "=" + std::to_string(local_world_size) + ")");
  }
}

void ValidateRdzv(const std::string& rdzv) {
  if (rdzv.empty()) {
    throw ConfigError(std::string(kEnvRdzv) +
                      " is empty: give a store directory or redis://host:port");
  }
}

void ValidateRunId(const std::string& run_id) {
  if (run_id.empty() || run_id.find('/') != std::string::npos) {
    throw ConfigError(std::string(kEnvRunId) + "='" + run_id + "' must be non-empty without '/'");
  }
}

void RankEnv::Validate() const {
  ValidateWorld(launcher, rank, world_size, local_rank, local_world_size);
  ValidateRdzv(rdzv);
  ValidateRunId(run_id);
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

bool InSlurmStep(const EnvLookup& env) {
  return env(kEnvSlurmProcId).has_value() && env(kEnvSlurmNtasks).has_value() &&
         env(kEnvSlurmStepId).has_value();
}

}  // namespace

bool LaunchedAsRank(const EnvLookup& env) {
  // Either variable alone is a broken launch (RankEnvFromEnvironment names
  // both), not a binary that should quietly spawn ranks of its own.
  return env(kEnvRank).has_value() || env(kEnvWorldSize).has_value() || InSlurmStep(env);
}

int SlurmTasksOnNode(const std::string& list, int node) {
  // Entries "N" or "N(xK)", comma-separated, covering nodes in order.
  const std::string what = std::string(kEnvSlurmStepTasksPerNode) + "='" + list + "'";
  int first = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string entry = list.substr(pos, comma - pos);
    const size_t paren = entry.find("(x");
    const int tasks = ParseInt(entry.substr(0, paren), what);
    int repeat = 1;
    if (paren != std::string::npos) {
      if (entry.back() != ')') throw ConfigError(what + " is not a SLURM tasks-per-node list");
      repeat = ParseInt(entry.substr(paren + 2, entry.size() - paren - 3), what);
    }
    if (node < first + repeat) return tasks;
    first += repeat;
    pos = comma + 1;
  }
  throw ConfigError(what + " lists " + std::to_string(first) + " nodes; " + kEnvSlurmNodeId +
                    "=" + std::to_string(node) + " is not among them");
}

namespace {

// WORLD_SIZE may legitimately be written "0" by a broken launcher: parse
// signed so the message says "must be >= 1" rather than "not an integer".
int ParseSigned(const std::string& text, const std::string& what) {
  if (!text.empty() && text[0] == '-') return -ParseInt(text.substr(1), what);
  return ParseInt(text, what);
}

void ReadTorchrun(const EnvLookup& env, RankEnv& out) {
  const auto rank = env(kEnvRank);
  const auto world = env(kEnvWorldSize);
  if (!rank || !world) {
    throw ConfigError(std::string("RANK and WORLD_SIZE must both be set (got RANK=") +
                      (rank ? *rank : "<unset>") + ", WORLD_SIZE=" + (world ? *world : "<unset>") +
                      ")");
  }
  out.launcher = Launcher::kTorchrun;
  out.rank = ParseSigned(*rank, kEnvRank);
  out.world_size = ParseSigned(*world, kEnvWorldSize);
  const auto local_rank = env(kEnvLocalRank);
  const auto local_world = env(kEnvLocalWorldSize);
  // Without the local variables, assume one host: local == global.
  out.local_rank = local_rank ? ParseSigned(*local_rank, kEnvLocalRank) : out.rank;
  out.local_world_size =
      local_world ? ParseSigned(*local_world, kEnvLocalWorldSize) : out.world_size;
  if (const auto node = env(kEnvGroupRank)) out.node_rank = ParseInt(*node, kEnvGroupRank);
  if (const auto id = env("TORCHELASTIC_RUN_ID"); id && !id->empty() && *id != "none") {
    out.run_id = "torchrun-" + *id;
  }
}

void ReadSlurm(const EnvLookup& env, RankEnv& out) {
  out.launcher = Launcher::kSlurm;
  out.rank = ParseSigned(*env(kEnvSlurmProcId), kEnvSlurmProcId);
  out.world_size = ParseSigned(*env(kEnvSlurmNtasks), kEnvSlurmNtasks);
  const auto local = env(kEnvSlurmLocalId);
  const auto node = env(kEnvSlurmNodeId);
  out.local_rank = local ? ParseSigned(*local, kEnvSlurmLocalId) : out.rank;
  out.node_rank = node ? ParseInt(*node, kEnvSlurmNodeId) : 0;
  // The step's own layout first (srun -n may use fewer tasks than the job).
  auto per_node = env(kEnvSlurmStepTasksPerNode);
  if (!per_node) per_node = env("SLURM_TASKS_PER_NODE");
  out.local_world_size = per_node ? SlurmTasksOnNode(*per_node, out.node_rank) : out.world_size;
  if (const auto job = env("SLURM_JOB_ID")) {
    out.run_id = "slurm-" + *job + "." + *env(kEnvSlurmStepId);
  }
}

}  // namespace

RankEnv RankEnvFromEnvironment(const EnvLookup& env) {
  RankEnv out;
  const bool slurm = !(env(kEnvRank) || env(kEnvWorldSize)) && InSlurmStep(env);
  if (slurm) {
    ReadSlurm(env, out);
  } else {
    ReadTorchrun(env, out);
  }
  const auto rdzv = env(kEnvRdzv);
  if (!rdzv) {
    if (const auto master = env(kEnvMasterAddr); master && !slurm) {
      const auto port = env(kEnvMasterPort);
      throw ConfigError(std::string(kEnvRdzv) + " is not set: " + kEnvMasterAddr + ":" +
                        kEnvMasterPort + " (" + *master + ":" + port.value_or("<unset>") +
                        ") is torchrun's own c10d TCPStore, which this suite does not speak; "
                        "run redis-server on a host every rank reaches and export " +
                        kEnvRdzv + "=redis://" + *master + ":6379 (or a directory, on one host)");
    }
    throw ConfigError(std::string(kEnvRdzv) +
                      " is not set: give a store directory shared by all ranks, or redis://host:port");
  }
  out.rdzv = *rdzv;
  if (const auto run_id = env(kEnvRunId)) out.run_id = *run_id;
  if (const auto backend = env(kEnvBackend)) out.backend = *backend;
  if (const auto share = env(kEnvShareGpu)) out.share_gpu = (*share == "1");
  out.Validate();
  return out;
}

}  // namespace ddp::launch
