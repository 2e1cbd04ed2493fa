// tools/trace: the flight recorder analyzer over a folder of dumps -- the
// suite's own (rank<R>.json) or PyTorch's (nccl_trace_rank_<R>, pickle or
// JSON, from _dump_fr_trace() or dump-on-timeout).
//
//   bazel run //tools:trace -- DIR [--json] [--entries N] [--comm NAME]
//                                  [--world_size N] [--to-fr OUT]
//
// Prints the one-line verdict (the culprit ranks and the first collective
// where the ranks part ways), the positions of every rank there, and each
// rank's call site (--json: the same as one JSON object). --to-fr writes the
// suite's dumps in PyTorch's format instead.
// Exit status: 0 healthy, 1 a problem found, 2 bad usage or bad input (one
// line naming the file and what is wrong with it).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/cli/flags.h"
#include "core/trace/analyze.h"
#include "core/trace/dump_json.h"
#include "tools/trace/fr_analyze.h"
#include "tools/trace/fr_dump.h"
#include "tools/trace/to_fr.h"

namespace {

constexpr char kProgram[] = "trace";

int Usage(const std::string& message) {
  std::fprintf(stderr,
               "%s: %s (usage: trace DIR [--json] [--entries N] [--comm NAME]; see --help)\n",
               kProgram, message.c_str());
  return 2;
}

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none recorded" : s;
}

// The first (by name) of the suite's own dumps in DIR (rank<R>.json
// exactly: a ranks.json beside PyTorch's dumps is neither), or "".
std::string FirstSuiteDump(const std::string& dir) {
  std::error_code ec;
  std::string first;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (ddp::trace::SuiteDumpRank(name) && (first.empty() || name < first)) first = name;
  }
  return first;
}

int RunPyTorch(const std::string& dir, bool json, const std::string& pg, int world_size) {
  ddp::trace::fr::DirDumps dumps;
  try {
    dumps = ddp::trace::fr::ReadDir(dir, world_size);
  } catch (const ddp::trace::DumpError& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 2;
  }
  if (!pg.empty()) {
    std::vector<std::string> names;
    for (const auto& d : dumps.by_rank) {
      if (!d) continue;
      for (const auto& e : d->entries) {
        if (std::find(names.begin(), names.end(), e.pg_name) == names.end())
          names.push_back(e.pg_name);
      }
    }
    if (std::find(names.begin(), names.end(), pg) == names.end()) {
      return Usage("--comm: '" + pg +
                   "' is no process group of these dumps (allowed: " + Join(names) + ")");
    }
  }
  const ddp::trace::fr::Analysis a = ddp::trace::fr::Analyze(dumps, pg);
  std::printf("%s", json ? (Dump(a.json, 2) + "\n").c_str() : a.report.c_str());
  return a.healthy ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int entries = 3;
  int world_size = 0;
  std::string comm;
  std::string dir;
  std::string to_fr;
  ddp::cli::Flags flags(
      kProgram,
      "Your PyTorch job hangs: dump every rank's Flight Recorder\n"
      "(torch._C._distributed_c10d._dump_fr_trace() into DIR/nccl_trace_rank_<R>, or\n"
      "TORCH_FR_DUMP_ON_TIMEOUT files), then `trace DIR` names the culprit ranks, the first\n"
      "collective where the ranks part ways (process group, sequence id, op, sizes, dtypes,\n"
      "state on each rank) and each rank's call site in your code. The suite's own dumps\n"
      "rank<R>.json (core/comm/README.md) are read the same way. Usage: trace DIR [flags].\n"
      "Exit: 0 healthy, 1 a problem found, 2 bad usage or bad input (missing, truncated or\n"
      "foreign dumps, dumps of two jobs in one folder).\n"
      "Reads only regular files of at most 64 MiB each, from worlds of at most 65536 ranks;\n"
      "anything else (a device, a FIFO, a larger file or world) is bad input.");
  flags.Bool("json", &json, "print the analysis as one JSON object");
  flags.Int("entries", &entries, "last entries shown per rank (the suite's dumps)", 0, 2000);
  flags.String("comm", &comm, "communicator (suite) or process group name (PyTorch) to analyse");
  flags.Int(
      "world_size", &world_size,
      "PyTorch dumps: the job's world size, when the last ranks sent no dump (0: from the dumps)",
      0, ddp::trace::kMaxWorldSize);
  flags.Path(
      "to-fr", &to_fr,
      "write the suite's dumps in DIR as PyTorch Flight Recorder pickles into this folder");
  flags.Path("dir", &dir, "the folder of dumps (also the positional argument)");

  // DIR may come first or anywhere as the one positional argument.
  std::vector<char*> rest = {argv[0]};
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-", 0) == 0) {
      rest.push_back(argv[i]);
      const bool takes_value = arg == "--entries" || arg == "--comm" || arg == "--dir" ||
                               arg == "--world_size" || arg == "--to-fr";
      if (takes_value && i + 1 < argc) rest.push_back(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  switch (flags.Parse(static_cast<int>(rest.size()), rest.data())) {
    case ddp::cli::Flags::Result::kOk:
      break;
    case ddp::cli::Flags::Result::kHelp:
      return 0;
    case ddp::cli::Flags::Result::kError:
      return 2;
  }
  if (positional.size() > 1)
    return Usage("one DIR expected, got " + std::to_string(positional.size()));
  if (!positional.empty()) {
    if (!dir.empty()) return Usage("DIR given twice (positional and --dir)");
    dir = positional[0];
  }
  if (dir.empty()) return Usage("no DIR given");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Usage("DIR: " + dir + " is not a folder");

  // Both kinds in one folder: which job's are they? Refused, naming one of
  // each, rather than one kind read and the other ignored.
  const std::string suite_dump = FirstSuiteDump(dir);
  const std::string fr_dump = ddp::trace::fr::FirstFrDump(dir);
  if (!suite_dump.empty() && !fr_dump.empty()) {
    std::fprintf(stderr,
                 "%s: %s holds both the suite's dumps (%s) and PyTorch's (%s); give the folder "
                 "of one job\n",
                 kProgram, dir.c_str(), suite_dump.c_str(), fr_dump.c_str());
    return 2;
  }
  if (suite_dump.empty()) {
    if (!to_fr.empty())
      return Usage("--to-fr: " + dir + " holds no rank<R>.json dumps of the suite");
    return RunPyTorch(dir, json, comm, world_size);
  }
  if (flags.WasSet("world_size"))
    return Usage("--world_size: for PyTorch dumps only (the suite's state it)");
  std::vector<std::optional<ddp::trace::RankDump>> dumps;
  try {
    dumps = ddp::trace::ReadDumpDir(dir);
    if (!to_fr.empty()) {
      const auto paths = ddp::trace::fr::WriteFrDir(dumps, to_fr);
      std::printf("wrote %zu PyTorch Flight Recorder dump%s to %s (nccl_trace_rank_<R>)\n",
                  paths.size(), paths.size() == 1 ? "" : "s", to_fr.c_str());
      return 0;
    }
  } catch (const ddp::trace::DumpError& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 2;
  }
  if (!comm.empty()) {
    // An unknown name must not quietly fall back to the first communicator.
    std::vector<std::string> names;
    for (const auto& d : dumps) {
      if (!d) continue;
      for (const auto& c : d->comms) {
        if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
      }
    }
    if (std::find(names.begin(), names.end(), comm) == names.end()) {
      return Usage("--comm: '" + comm +
                   "' is no communicator of these dumps (allowed: " + Join(names) + ")");
    }
  }
  ddp::trace::AnalyzeOptions options;
  options.prefer_comm = comm;
  options.last_entries = entries;
  const ddp::trace::Analysis a = ddp::trace::Analyze(dumps, options);
  if (json) {
    std::printf("%s\n", Dump(a.json, 2).c_str());
  } else {
    std::printf("%s", a.report.c_str());
  }
  return a.mismatch ? 1 : 0;
}
