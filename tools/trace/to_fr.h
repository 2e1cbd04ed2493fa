// --to-fr: the suite's own recorder dumps (rank<R>.json, core/trace) written
// in PyTorch's Flight Recorder format, so that PyTorch's torchfrtrace (and
// anything else that reads PyTorch's dumps) can read them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/trace/model.h"

namespace ddp::trace::fr {

// The pickle (protocol 2) that _dump_fr_trace() would have written for this
// rank: version "2.10", pg_config and pg_status per communicator, one entry
// per recorded collective (collective_seq_id = seq + 1, as PyTorch counts
// from 1), frames holding the call site.
std::string ToFrPickle(const RankDump& dump);

// Writes OUT/nccl_trace_rank_<R> for every dump, whole or not at all: into a
// hidden folder beside OUT, renamed to OUT once every file is written (and
// removed on failure, OUT left as it was). OUT must be new or an empty
// folder: a file already in it is refused, named. Returns the paths. Throws
// DumpError.
std::vector<std::string> WriteFrDir(const std::vector<std::optional<RankDump>>& dumps,
                                    const std::string& out);

}  // namespace ddp::trace::fr
