// tools/trace: the flight recorder analyzer over a folder of dumps.
//
//   bazel run //tools:trace -- DIR [--json] [--entries N] [--comm NAME]
//
// Reads every DIR/rank<R>.json, prints the one-line verdict, the mismatch
// class with everyone's position at that collective, and each rank's last
// entries with their call sites (--json: the same as one JSON object).
// Exit status: 0 when the dumps agree, 1 when they show a mismatch, 2 for
// bad usage or an unreadable dump (the message names the file).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/cli/flags.h"
#include "core/trace/analyze.h"
#include "core/trace/dump_json.h"

namespace {

constexpr char kProgram[] = "trace";

int Usage(const std::string& message) {
  std::fprintf(stderr, "%s: %s (usage: trace DIR [--json] [--entries N] [--comm NAME]; see --help)\n",
               kProgram, message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int entries = 3;
  std::string comm;
  std::string dir;
  ddp::cli::Flags flags(
      kProgram,
      "Analyses the flight recorder dumps rank<R>.json in DIR (written by every rank on a\n"
      "deadline, a peer failure, a dump request or SIGUSR1; see core/comm/README.md):\n"
      "the first collective where the ranks part ways, its mismatch class, and each\n"
      "rank's last collectives with their call sites. Usage: trace DIR [flags].\n"
      "Exit: 0 the dumps agree, 1 mismatch, 2 bad usage or unreadable dump.\n"
      "Reads only regular files of at most 64 MiB each, from worlds of at most 65536 ranks;\n"
      "anything else (a device, a FIFO, a larger file or world) is bad input.");
  flags.Bool("json", &json, "print the analysis as one JSON object");
  flags.Int("entries", &entries, "last entries shown per rank", 0, 2000);
  flags.String("comm", &comm, "communicator to analyse first (default: the first found)");
  flags.String("dir", &dir, "the folder of dumps (also the positional argument)");

  // DIR may come first or anywhere as the one positional argument.
  std::vector<char*> rest = {argv[0]};
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-", 0) == 0) {
      rest.push_back(argv[i]);
      const bool takes_value = arg == "--entries" || arg == "--comm" || arg == "--dir";
      if (takes_value && i + 1 < argc) rest.push_back(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  switch (flags.Parse(static_cast<int>(rest.size()), rest.data())) {
    case ddp::cli::Flags::Result::kOk: break;
    case ddp::cli::Flags::Result::kHelp: return 0;
    case ddp::cli::Flags::Result::kError: return 2;
  }
  if (positional.size() > 1) return Usage("one DIR expected, got " + std::to_string(positional.size()));
  if (!positional.empty()) {
    if (!dir.empty()) return Usage("DIR given twice (positional and --dir)");
    dir = positional[0];
  }
  if (dir.empty()) return Usage("no DIR given");

  std::vector<std::optional<ddp::trace::RankDump>> dumps;
  try {
    dumps = ddp::trace::ReadDumpDir(dir);
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
      std::string allowed;
      for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
      return Usage("--comm: '" + comm + "' is no communicator of these dumps (allowed: " +
                   (allowed.empty() ? "none recorded" : allowed) + ")");
    }
  }
  ddp::trace::AnalyzeOptions options;
  options.prefer_comm = comm;
  options.last_entries = entries;
  const ddp::trace::Analysis a = ddp::trace::Analyze(dumps, options);
  if (json) {
    std::printf("%s\n", a.json.Dump(2).c_str());
  } else {
    std::printf("%s", a.report.c_str());
  }
  return a.mismatch ? 1 : 0;
}
