// Running one distributed computation of a repro/fix variant on W ranks.
//
// Two ways, chosen by how the binary was started:
//  - spawned (the default): W fresh rank processes are forked for this one
//    world, each builds its own communicator through the rendezvous store.
//    A rank that aborts, crashes or hangs is a reported outcome (the
//    per-rank RunResult), never a crash of the caller — the repros need
//    exactly that, since raw collectives with mismatched arguments abort.
//  - launched (RANK and WORLD_SIZE set by ddprun, torchrun, srun): this
//    process is one rank; every world is a new communicator among the
//    launcher's ranks, run in this process.
// Either way rank 0's returned JSON object comes back as WorldResult::value.
//
// What a world never turns into a result:
//  - a usage error on any rank (an unusable backend, a bind address that
//    does not resolve, too low an open-file limit: a ConfigError) is thrown
//    as a ConfigError and remembered (FirstUsageError), so PairMain exits 2
//    without writing a record even when a pair caught the exception;
//  - SIGINT/SIGTERM/SIGHUP (once PairMain installed its handlers) stop every
//    rank at once and throw Interrupted, which no pair catches.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/launch/supervise.h"
#include "core/results/json.h"

namespace ddp::harness {

struct WorldOptions {
  int world_size = 4;
  std::string backend = "gloo";
  double timeout_s = 60;  // deadline of every collective
  bool checked = false;   // checked mode (fingerprints before each call)
  // NCCL: ranks may share GPUs (--share_gpu). Spawned worlds also share when
  // DDP_SHARE_GPU=1 or fewer GPUs than ranks are visible
  // (core/launch/share_gpu.h); launched ranks when DDP_SHARE_GPU=1.
  bool share_gpu = false;
  // Spawned mode: the whole world must finish within this many seconds
  // (0: WorldDeadlineS below). A rank stopped (SIGSTOP) while its peers have
  // ended is killed after one second instead (supervise.h).
  double world_deadline_s = 0;
};

struct WorldResult {
  bool ok = false;             // every rank finished and rank 0 returned a value
  bool has_value = false;      // rank 0 returned a value (even if a peer failed)
  results::Json value;         // rank 0's object (null when !has_value)
  // Every rank's object. Spawned mode: null for a rank that returned none
  // (it crashed, hung or threw). Launched mode: gathered over the world's
  // communicator after the body, so every rank holds all of them (and
  // `value` is rank 0's on every rank).
  std::vector<results::Json> rank_values;
  std::string failure;         // what went wrong, readable, when !ok
  launch::RunResult run;       // spawned mode: each rank's outcome
  bool spawned = false;
};

// Thrown by RunWorld when the process was asked to stop (deliberately not a
// std::exception: pairs turn std::exceptions into error records).
struct Interrupted {
  int signal = 0;
};

// The first usage error any world met in this process, "" if none.
std::string FirstUsageError();

// Tells the launcher (failure_report.h) whether this rank's failure is its
// own or a peer's: a PeerError (a peer died) or a DeadlineError (a peer never
// entered the collective) is a peer's.
void ReportRankFailure(const std::exception& e);

// The body runs on every rank; what rank 0 returns is the world's value
// (and every rank's value is in rank_values).
// Exceptions thrown by the body (comm::CommError included) end the rank with
// exit code 3 and their message in `failure`.
using RankBody = std::function<results::Json(comm::Comm&)>;

WorldResult RunWorld(const WorldOptions& options, const RankBody& body);

// True when a launcher started this process as one rank (RANK/WORLD_SIZE).
bool LaunchedAsRank();

// A spawned world's bound: world_deadline_s when set, else 4 x timeout_s +
// 10 s plus what the ranks' start-up bound adds over timeout_s (none on
// Gloo by default; on NCCL at least 60 s - timeout_s: comm/options.h).
double WorldDeadlineS(const WorldOptions& o);
// This process's rank under a launcher, 0 otherwise.
int LauncherRank();
// The launcher's world size; 0 when not launched as a rank.
int LauncherWorldSize();

}  // namespace ddp::harness
