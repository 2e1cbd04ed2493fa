// The main() of every repro/fix binary: the common flags, running the
// variants, the table on the console, the records with --json.
//
//   int main(int argc, char** argv) {
//     ddp::harness::PairSpec spec;
//     spec.program = "repro_mean_of_means";
//     spec.summary = "...";
//     spec.add_flags = [&](ddp::cli::Flags& flags) { flags.Bool("sweep", &sweep, "..."); };
//     spec.shared_flags = {ddp::device::DeviceFlag(&device)};  // --device
//     spec.run = [](const ddp::harness::CommonFlags& f) { return Records(f); };
//     return ddp::harness::PairMain(argc, argv, spec);
//   }
//
// Exit status: 0 when every record has its expected verdict, 1 when one does
// not (results::ExitStatus, core/results/record.h), 2 for bad usage
// (launch::kExitUsage, core/cli/config_error.h), 128 + the signal when
// SIGINT or SIGTERM stopped the run (core/launch/interrupt.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cli/flags.h"
#include "core/harness/world.h"
#include "core/results/record.h"

namespace ddp::harness {

// The flags every pair takes, with these names (scripts rely on them).
struct CommonFlags {
  int world_size = 4;
  std::string backend = "gloo";
  std::int64_t seed = 0;
  int seeds = 5;  // how many seeds to sweep: seed, seed+1, ...
  std::int64_t n = 1003;
  int batch_size = 32;
  bool drop_last = false;
  double timeout = 60;  // collective deadline, seconds
  std::string json;     // where to write the records; empty: don't
  bool verbose = false;  // print every field of every record after the table
  bool share_gpu = false;  // NCCL: ranks share GPUs (also automatic: world.h)

  WorldOptions World(int world_size) const;
};

// A flag that several pairs take with one name, help and check, so that
// their main()s do not each repeat it (core/device's --device and placement
// flags: device_flag.h).
struct SharedFlag {
  std::function<void(cli::Flags&)> add;
  // "" or the usage error (exit 2), which names the flag and its values.
  std::function<std::string(const CommonFlags&)> check;
};

struct PairSpec {
  std::string program;
  std::string summary;
  CommonFlags defaults;
  // The least --world_size the pair can run (the flag's allowed range, which
  // --help states, is min_world_size..64).
  int min_world_size = 1;
  // Registers the pair's own flags (optional).
  std::function<void(cli::Flags&)> add_flags;
  // Registered after add_flags's, checked (in order) before validate.
  std::vector<SharedFlag> shared_flags;
  // Non-empty for a repro that spawns its own ranks (its rows hang or kill
  // ranks on purpose, which would end a launcher's whole run): why, in the
  // exit-2 message it gives when started under a launcher.
  std::string spawns_own_ranks;
  // Checks the pair's own flags after parsing; returns "" or the message
  // (which must name the flag and its allowed values): exit 2.
  std::function<std::string(const CommonFlags&)> validate;
  // Runs every variant and configuration; returns the records.
  std::function<std::vector<results::Record>(const CommonFlags&)> run;
};

int PairMain(int argc, char** argv, const PairSpec& spec);

// Prints records as the closing table (core/results/table.h: 120 columns, key
// numbers whole, failed/hung rows' reports under it; verbose: every field).
void PrintTable(const std::vector<results::Record>& records, std::FILE* out,
                bool verbose = false);

// Relative error |a - b| / max(|b|, tiny): the yardstick of exactness tests.
double RelError(double a, double b);

}  // namespace ddp::harness
