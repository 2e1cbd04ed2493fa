// A rank's dump as JSON (the rank<R>.json files, and the text published
// through the store), written atomically and read back with errors that
// name the file and the field.
//
// Format (version 1):
//   {"format": "ddp-pitfalls flight recorder", "version": 1, "rank", "world_size",
//    "host", "pid", "run_id", "reason", "request", "dump_unix_s",
//    "comms": [{"name", "backend", "rank", "world_size", "deadline_s", "checked",
//               "state", "next_seq", "capacity",
//               "entries": [{"seq", "op", "dtype", "count", "counts" (allgatherv),
//                            "root" (broadcast), "reduce" (allreduce, reduce_scatter),
//                            "state", "enter_unix_s", "exit_unix_s" (once left),
//                            "file", "line", "function"}]}]}
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/results/json.h"
#include "core/trace/model.h"

namespace ddp::trace {

// Malformed or unreadable dump; what() names the file (or "store") and the field.
class DumpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

results::Json ToJson(const RankDump& dump);
results::Json ToJson(const TraceEntry& entry);
// Throws DumpError("<where>: <field>: <problem>").
RankDump DumpFromJson(const results::Json& json, const std::string& where);
RankDump ParseDump(const std::string& text, const std::string& where);

// "<dir>/rank<R>.json".
std::string DumpPath(const std::string& dir, int rank);
// Creates `dir` if needed and writes the dump through a temporary file and a
// rename: a reader sees the old dump or the new one, never half. Returns the
// path; throws DumpError on failure.
std::string WriteDumpFile(const std::string& dir, const RankDump& dump);
// Writes `bytes` to `path` through a temporary file beside it and a rename;
// throws DumpError naming the file.
void WriteFileAtomically(const std::string& path, const std::string& bytes);
// What a reader accepts before allocating for it: a dump file (ours or
// PyTorch's) is at most this big, and no world is larger. A hostile or
// corrupt dump (a link to /dev/zero, world_size 2^31-1) is refused by these
// rather than read forever or allocated for.
inline constexpr std::size_t kMaxDumpBytes = std::size_t{64} << 20;  // 64 MiB
inline constexpr int kMaxWorldSize = 1 << 16;

// The bytes of `path` if it is a regular file (a link to one counts) of at
// most kMaxDumpBytes; else DumpError naming it ("not a regular file", "larger
// than 64 MiB", "cannot open"). Never blocks on a FIFO.
std::string ReadDumpBytes(const std::string& path);
// Throws DumpError("nested deeper than N") when JSON text nests its arrays
// and objects deeper than max_depth: the JSON parser recurses, and a file of
// a million '[' must be bad input, not a stack overflow.
void CheckJsonDepth(std::string_view text, int max_depth);
// Throws DumpError naming the file.
RankDump ReadDumpFile(const std::string& path);

// The rank of a suite dump's file name, "rank<digits>.json" exactly (at
// most 6 digits); nullopt for any other name (ranks.json, rank1.json.tmp).
// The one test of "is this our dump" for every reader of a folder.
std::optional<int> SuiteDumpRank(std::string_view filename);

// (rank, file) pairs sorted by rank: throws DumpError naming both files
// when two claim one rank (rank1.json and rank01.json, nccl_trace_rank_1 and
// nccl_trace_rank_01). Which of them is the dump cannot be known, and
// keeping one would drop the other without a word.
void RefuseTwoFilesForOneRank(const std::vector<std::pair<int, std::string>>& sorted);

// Every rank<R>.json in `dir`, indexed by rank; the world size is the one
// the dumps state (nullopt for ranks without a file). Throws DumpError
// naming the file for an unreadable or inconsistent one, naming both files
// when two claim one rank (rank1.json and rank01.json), or the folder when
// it holds no dump.
std::vector<std::optional<RankDump>> ReadDumpDir(const std::string& dir);

}  // namespace ddp::trace
