// Writes real flight recorder dumps for trace_cli_test: 3 Gloo ranks into DIR.
//   make_dumps DIR skip    rank 2 skips collective #1 and stays alive: ranks 0
//                          and 1 time out in #2 and dump (rank 2 on their request)
//   make_dumps DIR agree   every rank runs 3 collectives, then dumps on SIGUSR1
// Prints "SITE <file>:<line>" of the collective the desync leaves waiting, and
// each rank's verdict line ("VERDICT <line>").
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"

namespace {

using namespace std::chrono_literals;

int Rank(const ddp::launch::RankEnv& env, const std::string& dir, bool skip) {
  ddp::comm::CommOptions o = ddp::comm::OptionsFromRankEnv(env);
  o.timeout = 1000ms;
  o.trace_dir = dir;
  auto comm = ddp::comm::MakeComm(o);
  std::vector<double> v = {1.0};
  try {
    comm->Allreduce(std::span(v));
    if (!skip || env.rank != 2) comm->Allreduce(std::span(v));
    if (env.rank == 0) std::printf("SITE %s:%d\n", __FILE__, __LINE__ + 1);
    comm->Allreduce(std::span(v));
  } catch (const ddp::comm::DeadlineError& e) {
    std::printf("VERDICT %s\n", e.context().verdict.c_str());
    return 3;
  }
  if (skip) {
    std::this_thread::sleep_for(3s);  // alive, so its watchdog answers the others
    return 0;
  }
  ::raise(SIGUSR1);  // the watchdog writes rank<R>.json
  const std::string path = dir + "/rank" + std::to_string(env.rank) + ".json";
  for (int i = 0; i < 500 && !std::filesystem::exists(path); ++i) std::this_thread::sleep_for(10ms);
  return std::filesystem::exists(path) ? 0 : 4;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: make_dumps DIR skip|agree\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (argc != 3 || (std::string(argv[2]) != "skip" && std::string(argv[2]) != "agree")) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const std::string dir = argv[1];
  const bool skip = std::string(argv[2]) == "skip";
  ddp::launch::SpawnOptions so;
  so.deadline = 20s;
  const auto r = ddp::launch::SpawnRanks(
      3, [&](const ddp::launch::RankEnv& env) { return Rank(env, dir, skip); }, so);
  for (const auto& rank : r.ranks) std::printf("%s", rank.stdout_text.c_str());
  std::printf("%s\n", r.Summary().c_str());
  return 0;
}
