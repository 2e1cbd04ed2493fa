#include "core/launch/spawn.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/cli/config_error.h"
#include "core/launch/failure_report.h"
#include "core/launch/guardian.h"
#include "core/launch/limits.h"
#include "core/launch/mps.h"
#include "core/launch/share_gpu.h"
#include "core/launch/spawn_hosts.h"
#include "core/store/store.h"

namespace ddp::launch {

std::string MakeFreshDir(const std::string& stem, const std::string& base) {
  std::string root = base;
  if (root.empty()) {
    for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
      const char* v = std::getenv(var);
      if (v != nullptr && *v != '\0') {
        root = v;
        break;
      }
    }
  }
  if (root.empty()) root = "/tmp";
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  std::string templ = root + "/" + stem + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw ConfigError("cannot create a directory under '" + root + "': " + std::strerror(errno));
  }
  return std::string(buf.data());
}

void ExportRankEnv(const RankEnv& env) {
  ::setenv(kEnvRank, std::to_string(env.rank).c_str(), 1);
  ::setenv(kEnvWorldSize, std::to_string(env.world_size).c_str(), 1);
  ::setenv(kEnvLocalRank, std::to_string(env.local_rank).c_str(), 1);
  ::setenv(kEnvLocalWorldSize, std::to_string(env.local_world_size).c_str(), 1);
  ::setenv(kEnvGroupRank, std::to_string(env.node_rank).c_str(), 1);
  ::setenv(kEnvRdzv, env.rdzv.c_str(), 1);
  ::setenv(kEnvRunId, env.run_id.c_str(), 1);
  if (!env.backend.empty()) ::setenv(kEnvBackend, env.backend.c_str(), 1);
  if (env.share_gpu) {
    ::setenv(kEnvShareGpu, "1", 1);
    // NCCL refuses two ranks on one GPU of one host; a distinct host id per
    // rank makes them talk over sockets instead (slow, but real NCCL).
    ::setenv("NCCL_HOSTID", ("ddp-rank-" + std::to_string(env.rank)).c_str(), 1);
  }
}

RunResult SpawnRanks(int world_size, const RankFn& fn, const SpawnOptions& options) {
  if (world_size < 1) {
    throw ConfigError("world size " + std::to_string(world_size) + " must be >= 1");
  }
  EnsureFileLimit(FilesNeeded(world_size), std::to_string(world_size) + " ranks");
  int gpus = options.visible_gpus;
  if (gpus < 0 && options.backend == "nccl" && !options.share_gpu) gpus = VisibleGpuCount();
  const ShareGpuDecision share =
      DecideShareGpu(options.backend, options.share_gpu, world_size, gpus);
  static std::atomic<bool> said_share{false};
  if (share.share && options.backend == "nccl" && !said_share.exchange(true)) {
    std::fprintf(stderr,
                 "[ddp::launch] ranks share GPUs, one NCCL_HOSTID per rank (%s): traffic over "
                 "sockets, functional runs only, timings are not meaningful\n",
                 share.why.c_str());
  }
  // NCCL ranks sharing a GPU are time-sliced without CUDA MPS (mps.h).
  if (share.share && options.backend == "nccl") EnsureMps();
  // The run's own folder: the store (unless one was given) and the ranks'
  // failure reports. The guardian removes it if we die before we do.
  const std::string run_dir = MakeFreshDir("ddp-rdzv");
  GuardPath(run_dir);
  const bool fresh = options.store_dir.empty();
  // DDP_SPAWN_RDZV / DDP_SPAWN_HOSTS (spawn_hosts.h): ranks on test hosts.
  const auto spawn_rdzv = fresh ? ProcessEnv(kEnvSpawnRdzv) : std::nullopt;
  const std::vector<SpawnHost> hosts = SpawnHostsFromEnvironment();
  const std::string dir = !fresh ? options.store_dir : spawn_rdzv ? *spawn_rdzv : run_dir;
  // A shared store outlives the world: its keys need a run id of their own.
  static std::atomic<int> worlds{0};
  const std::string run_id = spawn_rdzv ? options.run_id + "-" + std::to_string(::getpid()) +
                                              "-" + std::to_string(worlds++)
                                        : options.run_id;
  const bool keep = fresh && options.keep_store;
  auto cleanup = [&] {
    if (spawn_rdzv) {
      try {
        store::OpenStore(dir, std::chrono::milliseconds(250))->DeletePrefix(run_id + "/");
      } catch (const std::exception&) {
        // The store is gone: nothing left to delete that anyone can reach.
      }
    }
    if (!keep) {
      std::error_code ec;
      std::filesystem::remove_all(run_dir, ec);
    }
    ReleasePath(run_dir);
  };

  std::vector<ChildProcess> children;
  RunResult result;
  try {
    // Fails early (ConfigError) on an unusable directory or a silent server
    // (and is closed again: the forked ranks must not share its connection).
    store::OpenStore(dir, std::min(options.deadline, std::chrono::milliseconds(5000)));
    for (int rank = 0; rank < world_size; ++rank) {
      RankEnv env;
      env.rank = rank;
      env.world_size = world_size;
      env.local_rank = rank;
      env.local_world_size = world_size;
      env.rdzv = dir;
      env.run_id = run_id;
      env.backend = options.backend;
      env.share_gpu = share.share;
      const std::string failure_file = run_dir + "/rank-" + std::to_string(rank) + ".failure";
      const SpawnHost* host = hosts.empty() ? nullptr : &hosts[rank % hosts.size()];
      children.push_back(StartChild(rank, [&fn, env, failure_file, host] {
        if (host != nullptr) EnterSpawnHost(*host);
        ExportRankEnv(env);
        ::setenv(kEnvFailureFile, failure_file.c_str(), 1);
        return fn(env);
      }));
      children.back().failure_file = failure_file;
    }
  } catch (...) {
    // A failed fork or pipe: take down the ranks already started, then report.
    SuperviseOptions stop;
    stop.deadline = std::chrono::milliseconds(0);
    stop.kill_grace = std::chrono::milliseconds(0);
    Supervise(std::move(children), stop);
    cleanup();
    throw;
  }
  SuperviseOptions sup;
  sup.deadline = options.deadline;
  sup.fail_fast = options.fail_fast;
  sup.echo = options.echo;
  sup.kill_grace = options.kill_grace;
  sup.forward_signals = options.forward_signals;
  result = Supervise(std::move(children), sup);
  cleanup();
  return result;
}

}  // namespace ddp::launch
