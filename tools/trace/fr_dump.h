// PyTorch's Flight Recorder dumps (one file per rank): what the analyzer
// needs from them, read from the pickle that
// torch._C._distributed_c10d._dump_fr_trace() and dump-on-timeout write, or
// from the JSON of _dump_fr_trace_json(). Facts about the format (PyTorch
// 2.15, gloo; read from its dumps, as tools/trace/README.md's corpus shows):
// a dict with version, pg_config, pg_status, comm_lib_version, entries; each
// entry with frames, record_id, pg_id, process_group (name, desc),
// collective_seq_id, p2p_seq_id, is_p2p, profiling_name ("gloo:all_reduce"),
// input_sizes, input_dtypes, output_sizes, output_dtypes, state,
// time_created_ns, timeout_ms.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/dump_json.h"  // DumpError, ReadDumpBytes, kMaxWorldSize

namespace ddp::trace::fr {

struct Frame {
  std::string name, file;
  int64_t line = 0;
};

struct Entry {
  int64_t record_id = 0;
  int64_t pg_id = 0;
  std::string pg_name, pg_desc;  // process_group
  int64_t seq = 0;               // collective_seq_id
  int64_t p2p_seq = 0;
  bool is_p2p = false;
  std::string profiling_name;  // "gloo:all_reduce"
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  std::string state;  // "scheduled", "started", "completed"
  int64_t time_created_ns = 0;
  int64_t timeout_ms = 0;
  // The first of `frames` (innermost first) outside torch and the
  // interpreter's plumbing: the user's file and line. Only this one is kept
  // (a dump of 64 ranks x 2000 entries holds over a million frames).
  std::optional<Frame> user_frame;

  // "all_reduce": profiling_name without the backend.
  std::string Op() const;
  // The user's frame, or null when there is none (JSON dumps have no frames).
  const Frame* UserFrame() const { return user_frame ? &*user_frame : nullptr; }
};

// One pg_config entry. NCCL's are keyed by the group's name and hold its
// global ranks; PyTorch 2.15's gloo writes a single entry named '' holding
// the group-local ranks 0..n-1 of the last group that rank joined, which
// says nothing about membership (fr_dump.cc, ReadDir).
struct Group {
  std::string name, desc;
  std::vector<int> ranks;  // empty when pg_config lists none
};

// PyTorch's default group: named "0" (the first group made), "default_pg".
bool IsDefaultGroup(const std::string& name, const std::string& desc);

struct Dump {
  int rank = 0;
  std::string path;
  std::string format;  // "pickle" | "json"
  std::string version;
  std::map<std::string, Group> pg_config;         // by name
  std::map<std::string, int64_t> last_completed;  // pg_status, by pg_id (decimal)
  std::vector<Entry> entries;
};

// Whether a frame's file is the user's: not torch's, not the interpreter's
// (multiprocessing, threading, runpy, "<string>").
bool IsUserFile(std::string_view file);

// Parses one file's bytes; throws DumpError("<path>: <what>") naming the
// field, "truncated", or "not a PyTorch Flight Recorder dump".
Dump ParseDump(std::string_view bytes, const std::string& path, int rank);

// The first (by name) of the folder's PyTorch dumps (files named
// <prefix><rank>, as torchfrtrace expects them; never the suite's
// rank<R>.json), or "" when it holds none.
std::string FirstFrDump(const std::string& dir);

struct DirDumps {
  std::string prefix;                        // "nccl_trace_rank_"
  std::vector<std::optional<Dump>> by_rank;  // world size = by_rank.size()
  std::vector<std::string> notes;            // e.g. how the world size was decided
};

// Reads every <prefix><rank> file of one prefix in `dir`. The world is the
// default group's members where a pg_config names it (NCCL), else the
// largest of: the highest rank with a file + 1, every pg_config group's
// highest rank + 1, and `world_size` when given (> 0). Throws DumpError with
// one line for: no dumps, two prefixes (two sets of dumps), a rank or group
// beyond kMaxWorldSize, dumps of two different jobs (different format
// versions; a named group with different members on two ranks; a rank
// beyond the named default group; one group name with two descriptions; the
// same collective passed by two ranks further apart than its timeout), a
// bad file. pg_config may differ across ranks the way PyTorch writes it.
DirDumps ReadDir(const std::string& dir, int world_size = 0);

}  // namespace ddp::trace::fr
