#include "tools/trace/to_fr.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/trace/dump_json.h"
#include "tools/trace/pickle.h"

namespace ddp::trace::fr {
namespace {

const char* TorchOp(comm::OpKind op) {
  switch (op) {
    case comm::OpKind::kAllgather:
      return "_allgather_base";
    case comm::OpKind::kAllgatherv:
      return "all_gather_v";
    case comm::OpKind::kAllreduce:
      return "all_reduce";
    case comm::OpKind::kBroadcast:
      return "broadcast";
    case comm::OpKind::kReduceScatter:
      return "_reduce_scatter_base";
    case comm::OpKind::kBarrier:
      return "barrier";
  }
  return "?";
}

const char* TorchDtype(comm::DType d) {
  switch (d) {
    case comm::DType::kFloat32:
      return "Float";
    case comm::DType::kFloat64:
      return "Double";
    case comm::DType::kInt32:
      return "Int";
    case comm::DType::kInt64:
      return "Long";
  }
  return "?";
}

// PyTorch's three states: the suite's entry either completed or did not.
const char* TorchState(State s) { return s == State::kCompleted ? "completed" : "started"; }

void Shapes(pickle::PickleWriter& w, const std::vector<uint64_t>& numels) {
  w.BeginList();
  for (uint64_t n : numels) {
    w.BeginList();
    w.Int(static_cast<int64_t>(n));
    w.EndList();
  }
  w.EndList();
}

void Strs(pickle::PickleWriter& w, std::size_t n, const char* s) {
  w.BeginList();
  for (std::size_t i = 0; i < n; ++i) w.Str(s);
  w.EndList();
}

void Entry(pickle::PickleWriter& w, const CommTrace& c, const std::string& pg,
           const std::string& desc, const TraceEntry& e, int64_t record_id, int64_t pg_id) {
  std::vector<uint64_t> in, out;
  const uint64_t world = static_cast<uint64_t>(c.world_size);
  switch (e.op) {
    case comm::OpKind::kBarrier:
      break;
    case comm::OpKind::kAllgather:
      in = {e.count};
      out = {e.count * world};
      break;
    case comm::OpKind::kAllgatherv: {
      uint64_t total = 0;
      for (uint64_t n : e.counts) total += n;
      in = {e.count};
      out = {total};
      break;
    }
    case comm::OpKind::kReduceScatter:
      in = {e.count};
      out = {world ? e.count / world : 0};
      break;
    default:
      in = {e.count};
      out = {e.count};
      break;
  }
  const char* dtype = TorchDtype(e.dtype);
  w.BeginDict();
  w.Str("record_id");
  w.Int(record_id);
  w.Str("pg_id");
  w.Int(pg_id);
  w.Str("process_group");
  w.BeginTuple();
  w.Str(pg);
  w.Str(desc);
  w.EndTuple();
  w.Str("collective_seq_id");
  w.Int(e.seq + 1);  // PyTorch counts from 1
  w.Str("p2p_seq_id");
  w.Int(0);
  w.Str("op_id");
  w.Int(e.seq + 1);
  w.Str("profiling_name");
  w.Str(c.backend + ":" + TorchOp(e.op));
  w.Str("time_created_ns");
  w.Int(static_cast<int64_t>(std::llround(e.enter_unix_s * 1e9)));
  w.Str("duration_ms");
  w.None();
  w.Str("input_sizes");
  Shapes(w, in);
  w.Str("input_dtypes");
  Strs(w, in.size(), dtype);
  w.Str("output_sizes");
  Shapes(w, out);
  w.Str("output_dtypes");
  Strs(w, out.size(), dtype);
  w.Str("state");
  w.Str(TorchState(e.state));
  w.Str("time_discovered_started_ns");
  w.None();
  w.Str("time_discovered_completed_ns");
  w.None();
  w.Str("retired");
  w.Bool(e.state != State::kEntered);
  w.Str("timeout_ms");
  w.Int(static_cast<int64_t>(std::llround(c.deadline_s * 1000)));
  w.Str("is_p2p");
  w.Bool(false);
  w.Str("frames");
  w.BeginList();
  w.BeginDict();
  w.Str("name");
  w.Str(ShortFunction(e.site.function));
  w.Str("filename");
  w.Str(e.site.file);
  w.Str("line");
  w.Int(e.site.line);
  w.EndDict();
  w.EndList();
  w.EndDict();
}

}  // namespace

std::string ToFrPickle(const RankDump& d) {
  pickle::PickleWriter w;
  // Process group names: "0" for the first communicator (PyTorch's default
  // group), then "1", ...; desc names the suite's communicator.
  auto pg_name = [](std::size_t i) { return std::to_string(i); };
  auto pg_desc = [](std::size_t i, const CommTrace& c) {
    return i == 0 ? std::string("default_pg") : c.name;
  };
  w.BeginDict();
  w.Str("version");
  w.Str("2.10");
  w.Str("comm_lib_version");
  w.Str("");
  w.Str("pg_config");
  w.BeginDict();
  for (std::size_t i = 0; i < d.comms.size(); ++i) {
    const CommTrace& c = d.comms[i];
    w.Str(pg_name(i));
    w.BeginDict();
    w.Str("name");
    w.Str(pg_name(i));
    w.Str("desc");
    w.Str(pg_desc(i, c));
    // Global ranks: the suite's communicators span the whole world.
    std::string ranks = "[";
    for (int r = 0; r < c.world_size; ++r) ranks += (r ? ", " : "") + std::to_string(r);
    w.Str("ranks");
    w.Str(ranks + "]");
    w.EndDict();
  }
  w.EndDict();
  w.Str("pg_status");
  w.BeginDict();
  for (std::size_t i = 0; i < d.comms.size(); ++i) {
    const CommTrace& c = d.comms[i];
    int64_t completed = 0;
    for (const TraceEntry& e : c.entries) {
      if (e.state == State::kCompleted) completed = e.seq + 1;
    }
    w.Str(std::to_string(i));
    w.BeginDict();
    w.Str("last_enqueued_collective");
    w.Int(c.next_seq);
    w.Str("last_started_collective");
    w.Int(c.next_seq);
    w.Str("last_completed_collective");
    w.Int(completed);
    w.EndDict();
  }
  w.EndDict();
  w.Str("entries");
  w.BeginList();
  int64_t record_id = 0;
  for (std::size_t i = 0; i < d.comms.size(); ++i) {
    for (const TraceEntry& e : d.comms[i].entries) {
      Entry(w, d.comms[i], pg_name(i), pg_desc(i, d.comms[i]), e, record_id++,
            static_cast<int64_t>(i));
    }
  }
  w.EndList();
  w.EndDict();
  return w.Finish();
}

std::vector<std::string> WriteFrDir(const std::vector<std::optional<RankDump>>& dumps,
                                    const std::string& out_arg) {
  namespace fs = std::filesystem;
  std::string out = out_arg;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  std::error_code ec;
  // OUT is new or empty: a file already there would sit beside the new dumps
  // (a stale nccl_trace_rank_5 read as a sixth rank), so it is refused,
  // named, rather than kept or deleted without a word.
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) throw DumpError(out + " exists and is not a folder");
    std::vector<std::string> names;
    for (const auto& f : fs::directory_iterator(out, ec)) names.push_back(f.path().filename());
    if (ec) throw DumpError("cannot list " + out + ": " + ec.message());
    if (!names.empty()) {
      std::sort(names.begin(), names.end());
      throw DumpError(out + " already holds " + names.front() +
                      (names.size() > 1 ? " and " + std::to_string(names.size() - 1) + " more"
                                        : std::string()) +
                      ": give a new or empty folder (its files would be mixed with the new dumps)");
    }
  }
  // Whole or not at all: every file goes into a hidden folder beside OUT,
  // which is renamed to OUT only when all are written. A failure (a full
  // disk) removes it and leaves OUT as it was; a reader never sees one file
  // of three (which `trace` would read as a world missing ranks).
  const fs::path target(out);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw DumpError("cannot create " + parent.string() + ": " + ec.message());
  std::string templ = (parent / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    throw DumpError("cannot create a folder beside " + out + ": " + std::strerror(errno));
  }
  const std::string tmp = templ;
  std::vector<std::string> paths;
  try {
    for (const auto& d : dumps) {
      if (!d) continue;
      const std::string name = "/nccl_trace_rank_" + std::to_string(d->rank);
      WriteFileAtomically(tmp + name, ToFrPickle(*d));
      paths.push_back(out + name);
    }
    if (::rename(tmp.c_str(), out.c_str()) != 0) {
      throw DumpError("cannot move the new dumps to " + out + ": " + std::strerror(errno));
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return paths;
}

}  // namespace ddp::trace::fr
