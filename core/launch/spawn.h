// SpawnRanks: run a function as W real rank processes (fork, no exec).
//
// Used by tests (one gtest spawns its own world; no external launcher) and by
// repro binaries that spawn their own ranks by default. Each rank gets a
// RankEnv (also exported as RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/
// DDP_RDZV/DDP_RUN_ID) pointing at a fresh FileStore directory. What happens
// to each rank (exit code, signal, deadline, output) comes back as data.
//
//   auto result = ddp::launch::SpawnRanks(4, [](const RankEnv& env) {
//     auto comm = ddp::comm::MakeComm(ddp::comm::OptionsFromRankEnv(env));
//     ...
//     return 0;
//   });
//   EXPECT_TRUE(result.all_ok()) << result.Summary();
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/launch/rank_env.h"
#include "core/launch/supervise.h"

namespace ddp::launch {

struct SpawnOptions {
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};
  std::string backend;         // exported as DDP_BACKEND when non-empty
  std::string store_dir;       // empty: a fresh directory under TEST_TMPDIR/TMPDIR/tmp
  bool keep_store = false;     // keep a fresh directory after the run (debugging)
  bool fail_fast = false;      // kill every rank when one fails
  bool echo = false;           // also print "[rank k] ..." lines as they come
  // Ranks share GPUs: a distinct NCCL_HOSTID per rank (functional runs on
  // one GPU). Also on by DDP_SHARE_GPU=1, or automatically for the nccl
  // backend when fewer GPUs than ranks are visible (share_gpu.h; printed).
  bool share_gpu = false;
  int visible_gpus = -1;       // for that choice; -1: ask the driver (nccl only)
  bool forward_signals = false;  // stop the ranks on SIGINT/SIGTERM/SIGHUP (supervise.h)
  std::string run_id = "spawn";
  std::chrono::milliseconds kill_grace{std::chrono::seconds(1)};
};

using RankFn = std::function<int(const RankEnv&)>;

// Throws ConfigError when world_size < 1, the store directory is unusable, or
// the open-file limit is too low for the ranks (limits.h).
RunResult SpawnRanks(int world_size, const RankFn& fn, const SpawnOptions& options = {});

// A new, empty directory "<base>/<stem>-XXXXXX"; base defaults to
// $TEST_TMPDIR, else $TMPDIR, else /tmp. Throws ConfigError on failure.
std::string MakeFreshDir(const std::string& stem, const std::string& base = "");

// Exports RANK/WORLD_SIZE/... of `env` into this process's environment.
void ExportRankEnv(const RankEnv& env);

}  // namespace ddp::launch
