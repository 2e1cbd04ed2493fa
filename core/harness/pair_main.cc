#include "core/harness/pair_main.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/cli/config_error.h"
#include "core/comm/options.h"
#include "core/harness/preflight.h"
#include "core/launch/interrupt.h"
#include "core/results/output_file.h"
#include "core/results/provenance.h"
#include "core/results/table.h"

namespace ddp::harness {
WorldOptions CommonFlags::World(int w) const {
  WorldOptions o;
  o.world_size = w;
  o.backend = backend;
  o.timeout_s = timeout;
  o.share_gpu = share_gpu;
  return o;
}

double RelError(double a, double b) {
  const double denom = std::max(std::fabs(b), 1e-300);
  return std::fabs(a - b) / denom;
}

void PrintTable(const std::vector<results::Record>& records, std::FILE* out, bool verbose) {
  results::TableOptions options;
  options.verbose = verbose;
  std::fputs(results::FormatTable(records, options).c_str(), out);
}

namespace {

// The first of: a launcher around a pair that spawns its own ranks, a shared
// flag's error, the pair's own check. "" when none.
std::string UsageError(const PairSpec& spec, const CommonFlags& f) {
  if (!spec.spawns_own_ranks.empty() && LaunchedAsRank()) {
    return "this repro spawns its own ranks (" + spec.spawns_own_ranks +
           "): run it without a launcher";
  }
  for (const SharedFlag& shared : spec.shared_flags) {
    if (std::string err = shared.check(f); !err.empty()) return err;
  }
  return spec.validate ? spec.validate(f) : "";
}

}  // namespace

int PairMain(int argc, char** argv, const PairSpec& spec) {
  CommonFlags f = spec.defaults;
  cli::Flags flags(spec.program, spec.summary);
  flags.Int("world_size", &f.world_size, "number of ranks to spawn", spec.min_world_size, 64);
  flags.Choice("backend", &f.backend, "collective engine", {"gloo", "nccl"});
  flags.Int64("seed", &f.seed, "first random seed", 0, 1LL << 40);
  flags.Int("seeds", &f.seeds, "how many seeds to sweep (seed, seed+1, ...)", 1, 10000);
  flags.Int64("n", &f.n, "dataset size", 0, 100000000);
  flags.Int("batch_size", &f.batch_size, "per-rank batch size", 1, 1000000);
  flags.Bool("drop_last", &f.drop_last, "drop the last incomplete batch (sampler and loader)");
  flags.Double("timeout", &f.timeout, "deadline of every collective, seconds", 0.05, 7 * 86400);
  // Under ddprun --collective-timeout (or any launcher that exports it) the
  // launcher's deadline holds unless --timeout is given (core/launch/README.md).
  flags.FromEnv("timeout", comm::kEnvTimeout);
  flags.Path("json", &f.json, "write the result records (a JSON array) to this file");
  flags.Bool("verbose", &f.verbose, "after the table, print every field of every record");
  flags.Bool("share_gpu", &f.share_gpu,
             "nccl: ranks share GPUs, one NCCL_HOSTID each (functional runs only; also "
             "automatic when fewer GPUs than ranks are visible, or DDP_SHARE_GPU=1)");
  if (spec.add_flags) spec.add_flags(flags);
  for (const SharedFlag& shared : spec.shared_flags) shared.add(flags);
  flags.ParseOrExit(argc, argv);
  if (const std::string err = UsageError(spec, f); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", spec.program.c_str(), err.c_str());
    return 2;
  }
  const bool launched = LaunchedAsRank();
  if (launched) {
    try {
      const int w = LauncherWorldSize();
      if (flags.WasSet("world_size") && w != f.world_size) {
        std::fprintf(stderr, "%s: --world_size %d ignored: the launcher started %d ranks\n",
                     spec.program.c_str(), f.world_size, w);
      }
      f.world_size = w;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", spec.program.c_str(), e.what());
      return 2;
    }
  }
  const bool leader = !launched || LauncherRank() == 0;
  // Under `bazel run` the working directory is the runfiles tree: a relative
  // --json path means the directory the user ran bazel from.
  if (!f.json.empty() && f.json[0] != '/') {
    if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) f.json = std::string(wd) + "/" + f.json;
  }
  // What cannot work is found now, not after the whole run.
  if (leader && !f.json.empty()) {
    if (const std::string err = results::CheckOutputFile(f.json); !err.empty()) {
      std::fprintf(stderr, "%s: --json %s: %s\n", spec.program.c_str(), f.json.c_str(), err.c_str());
      return 2;
    }
  }
  if (const std::string err = BackendProblem(f.backend); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", spec.program.c_str(), err.c_str());
    return 2;
  }
  // Ctrl-C or a SIGTERM stops the world running now, and the binary with a
  // message (a launcher, when there is one, handles signals itself).
  if (!launched) launch::InstallInterruptHandlers();

  std::vector<results::Record> records;
  try {
    records = spec.run(f);
  } catch (const launch::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", spec.program.c_str(), e.what());
    return 2;
  } catch (const Interrupted& i) {
    std::fprintf(stderr, "%s: interrupted by signal %d: every rank stopped, no records written\n",
                 spec.program.c_str(), i.signal);
    return 128 + i.signal;
  }
  // A usage error in any world (a pair may have caught it as a failed
  // variant): no record may claim a result for a world that could not run.
  if (const std::string err = FirstUsageError(); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", spec.program.c_str(), err.c_str());
    return 2;
  }
  if (!leader) return results::ExitStatus(records);

  PrintTable(records, stdout, f.verbose);
  if (!f.json.empty()) {
    const std::string err = results::WriteRecords(f.json, records, results::CollectProvenance());
    if (!err.empty()) {
      std::fprintf(stderr, "%s: --json: %s\n", spec.program.c_str(), err.c_str());
      return 2;
    }
    std::printf("records: %s (%zu)\n", f.json.c_str(), records.size());
  }
  return results::ExitStatus(records);
}

}  // namespace ddp::harness
