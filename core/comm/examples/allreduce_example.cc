// The smallest complete program on the Comm API.
//
// Spawns its own ranks by default:      allreduce_example --nproc 4
// Or runs as one rank under a launcher:  ddprun --nproc 4 -- allreduce_example
// (RANK/WORLD_SIZE/DDP_RDZV set: this process is that one rank).
//
// Each rank contributes rank + 1; the sum over W ranks must be W(W+1)/2.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/cli/config_error.h"
#include "core/comm/make_comm.h"
#include "core/launch/rank_env.h"
#include "core/launch/spawn.h"

namespace {

constexpr char kUsage[] =
    "usage: allreduce_example [--nproc N] [--backend gloo|nccl]\n"
    "  Without RANK/WORLD_SIZE in the environment, spawns N ranks (default 4);\n"
    "  under ddprun/torchrun, runs as the one rank they describe.\n";

int RunRank(const ddp::launch::RankEnv& env, const std::string& backend) {
  ddp::comm::CommOptions options = ddp::comm::OptionsFromRankEnv(env);
  if (!backend.empty()) options.backend = backend;
  auto comm = ddp::comm::MakeComm(options);
  std::vector<double> value = {static_cast<double>(comm->rank() + 1)};
  comm->Allreduce(std::span(value));
  const std::vector<int64_t> mine = {comm->rank()};
  const auto ranks = comm->Allgather(std::span<const int64_t>(mine));
  std::string gathered;
  for (int64_t r : ranks) gathered += (gathered.empty() ? "" : ", ") + std::to_string(r);
  const int w = comm->world_size();
  const double expected = w * (w + 1) / 2.0;
  std::printf("rank %d/%d on %s: allreduce(sum of rank+1) = %g (expected %g), "
              "allgather(rank) = [%s]\n",
              comm->rank(), w, comm->backend().c_str(), value[0], expected, gathered.c_str());
  return value[0] == expected ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = 4;
  std::string backend;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::printf("%s", kUsage);
        return 0;
      } else if (arg == "--nproc" && i + 1 < argc) {
        nproc = ddp::launch::ParseInt(argv[++i], "--nproc");
      } else if (arg == "--backend" && i + 1 < argc) {
        backend = argv[++i];
      } else {
        throw ddp::launch::ConfigError("unknown or incomplete argument '" + arg + "'\n" + kUsage);
      }
    }
    if (ddp::launch::LaunchedAsRank()) {
      return RunRank(ddp::launch::RankEnvFromEnvironment(), backend);
    }
    if (nproc < 1) throw ddp::launch::ConfigError("--nproc must be >= 1");
    ddp::launch::SpawnOptions spawn;
    spawn.echo = true;  // "[rank k] ..." lines, as under ddprun
    spawn.deadline = std::chrono::seconds(120);
    const auto result = ddp::launch::SpawnRanks(
        nproc, [&](const ddp::launch::RankEnv& env) { return RunRank(env, backend); }, spawn);
    if (!result.all_ok()) std::fprintf(stderr, "%s", result.Summary().c_str());
    return result.ExitCode();
  } catch (const ddp::launch::ConfigError& e) {
    std::fprintf(stderr, "allreduce_example: %s\n", e.what());
    return ddp::launch::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_example: %s\n", e.what());
    return 1;
  }
}
