// One DDP training epoch on W spawned rank processes, with a gradient
// allreduce every step (as DDP's backward does), in raw mode: when the
// ranks' step counts differ, the extra step's allreduce has no partner.
//
// What the ranks that run out of data do matters, and is a parameter:
//   kWaitForJob  finish the communicator and wait, alive, until every rank
//                has finished (an out-of-band mark in the rendezvous store,
//                like a job that ends when its last worker ends). To the
//                stuck rank this looks like NCCL in seed 001: the peers are
//                gone from the collective but nothing tells it so: it hangs.
//   kExit        exit as soon as their loop ends (destroy_process_group and
//                leave). On Gloo the stuck rank then sees the closed
//                connections and fails at once with a PeerError.
// The supervisor is fail-fast like torchrun: once a rank fails, the others
// are stopped; the whole world also has a deadline (the launcher's timeout).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device_flag.h"
#include "core/launch/supervise.h"
#include "core/results/json.h"
#include "repro/drop_last_hang/scenario.h"

namespace ddp::drop_last_hang {

enum class EarlyRanks { kWaitForJob, kExit };

struct HangOptions {
  std::string backend = "gloo";
  double collective_deadline_s = 2;  // every collective's deadline
  double world_deadline_s = 30;      // the launcher's timeout for the whole run
  EarlyRanks early = EarlyRanks::kWaitForJob;
  // NCCL: ranks share GPUs (--share_gpu; also automatic, core/launch/share_gpu.h).
  bool share_gpu = false;
  // Ctrl-C or SIGTERM to this process stops the ranks at once (the caller
  // has installed core/launch/interrupt.h's handlers and reports it), as in
  // every other pair's worlds.
  bool forward_signals = false;
  // The resolved --device (core/device/device_flag.h): where each step's
  // gradient allreduce runs (host: the host buffer; emulated or cuda: a
  // device buffer, core/device/device_allreduce.h). One collective either
  // way, at the same line of hang_run.cc.
  device::Placement device = device::Placement::kHost;
};

// The report line of a rank that finished its epoch (kind "finished").
struct FinishedReport {
  std::string kind = "finished";
  int rank = 0;
  int64_t steps = 0;
  int64_t collectives = 0;  // collectives it called
  // On a device: the rank's host<->device copies over its epoch
  // (core/device/copy_json.h; one gradient up and down per step); else null.
  results::Json device_copies;
};
DDP_JSON_FIELDS(FinishedReport, kind, rank, steps, collectives, device_copies)

// The report line of a rank whose collective failed (kind "deadline" or
// "peer").
struct FailureReport {
  std::string kind;
  int rank = 0;
  int64_t step = 0;  // the step it was in
  int64_t seq = 0;   // the collective's sequence number
  std::string op;
  double elapsed_s = 0;
  double deadline_s = 0;
  std::string message;         // the error's first line
  std::string verdict;         // the flight recorder analyzer's one line
  std::string mismatch_class;  // "missing ranks", ...
  std::string report;          // the desync report from every rank's dump
};
DDP_JSON_FIELDS(FailureReport, kind, rank, step, seq, op, elapsed_s, deadline_s, message, verdict,
                mismatch_class, report)

struct HangRun {
  launch::RunResult run;
  // Per rank: the report line the rank printed, in one of the two (neither
  // when it printed none, e.g. killed while blocked).
  std::vector<std::optional<FinishedReport>> finished;
  std::vector<std::optional<FailureReport>> failed;
  // Per rank: whether its process (or process group) still exists after
  // the run returned.
  std::vector<bool> left_behind;
};

HangRun RunTrainingWorld(const Config& config, const HangOptions& options);

// The line of the gradient allreduce in hang_run.cc: the call site the
// desync reports name ("repro/drop_last_hang/hang_run.cc:<line>").
int GradientAllreduceLine();

// Where each rank was at the verdict's collective: the report's indented
// lines ("rank 0: allreduce float64 x497, timed out after ...",
// "ranks [1, 2, 3]: never entered (...)").
std::vector<std::string> PositionLines(const std::string& report);

}  // namespace ddp::drop_last_hang
