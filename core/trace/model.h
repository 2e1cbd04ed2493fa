// The flight recorder's data: one entry per collective, one trace per
// communicator, one dump per rank. This is what a rank writes to
// rank<R>.json and what the analyzer reads back (dump_json.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective/types.h"

namespace ddp::trace {

// Entries kept per communicator unless configured (DDP_PITFALLS_TRACE_ENTRIES):
// the value PyTorch's Flight Recorder tutorial recommends for
// TORCH_NCCL_TRACE_BUFFER_SIZE.
inline constexpr std::size_t kDefaultEntries = 2000;

// Where a collective's entry stands. A collective is entered, then leaves in
// exactly one of the other states.
enum class State : uint8_t {
  kEntered,      // inside the call (the engine, or checked mode's exchange)
  kCompleted,    // returned normally
  kTimedOut,     // the deadline passed (DeadlineError)
  kPeerFailed,   // the engine reported a broken peer (PeerError)
  kCheckFailed,  // checked mode found the ranks disagreeing (CheckError)
};
const char* Name(State state);  // "entered", "completed", "timed_out", ...
std::optional<State> ParseState(std::string_view name);

// Why a rank's dump is missing when nothing more is known.
inline constexpr char kNoDumpWhy[] = "stopped, dead or unreachable";

// The caller of the Comm API (std::source_location, kept as text).
struct CallSite {
  std::string file;
  int line = 0;
  std::string function;
  bool operator==(const CallSite&) const = default;
};

struct TraceEntry {
  int64_t seq = -1;
  comm::OpKind op = comm::OpKind::kBarrier;
  comm::DType dtype = comm::DType::kFloat32;
  uint64_t count = 0;             // this rank's element count
  std::vector<uint64_t> counts;   // allgatherv: every rank's count, as this rank passed them
  int root = -1;                  // broadcast: the root, else -1
  int reduce = -1;                // allreduce/reduce_scatter: the ReduceOp, else -1
  State state = State::kEntered;
  double enter_unix_s = 0;        // wall clock of this rank's host
  std::optional<double> exit_unix_s;
  CallSite site;
  bool operator==(const TraceEntry&) const = default;
};

// One communicator's recent collectives on one rank.
struct CommTrace {
  std::string name;     // "comm0", ...: equal on every rank for the same communicator
  std::string backend;  // "gloo" | "nccl"
  int rank = 0;
  int world_size = 1;
  double deadline_s = 0;
  bool checked = false;
  std::string state = "active";  // "active" | "finished" | "broken"
  int64_t next_seq = 0;          // collectives entered so far
  int64_t capacity = 0;          // ring size: older entries were overwritten
  std::vector<TraceEntry> entries;  // oldest first, consecutive seqs
  bool operator==(const CommTrace&) const = default;
};

// Everything one rank (process) wrote in one dump.
struct RankDump {
  int rank = 0;
  int world_size = 1;
  std::string host;
  int64_t pid = 0;
  std::string run_id;
  std::string reason;   // "deadline", "peer failure", "request from rank 2", "SIGUSR1", ...
  std::string request;  // the store request this dump answers; empty otherwise
  double dump_unix_s = 0;
  std::vector<CommTrace> comms;
  bool operator==(const RankDump&) const = default;

  const CommTrace* Find(const std::string& comm_name) const;
};

// "allreduce float64 x497", "allreduce(max) int64 x2", "broadcast(root 1)
// float32 x8", "allgatherv float32 x[3, 2, 3]", "barrier".
std::string Describe(const TraceEntry& e);
// "repro/drop_last_hang/hang_run.cc:142".
std::string FileLine(const CallSite& site);
// The bare name of a source_location function_name(): "RankMain".
std::string ShortFunction(const std::string& function_name);

}  // namespace ddp::trace
