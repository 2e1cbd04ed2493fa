// CUDA MPS for ranks that share a GPU (mps.h), with a fake control program
// (testdata/fake_mps_control.sh) in place of nvidia-cuda-mps-control: ddprun
// and SpawnRanks start it only for NCCL ranks that share a GPU, the ranks
// inherit its pipe folder, it is told to quit when the launcher exits (the
// atexit path, through ddprun's normal exit) and its folder is removed; the
// launcher says on stderr what it did and how many rank processes reported
// attaching; DDP_MPS=0, a missing or failing control program, an existing
// daemon and a bad DDP_MPS each do what mps.h says. Whether a real daemon
// starts and ranks attach can only be seen on a GPU (the bundle's run).
#include "core/launch/mps.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/launch/spawn.h"
#include "core/launch/testing/run_command.h"
#include "gtest/gtest.h"

namespace ddp::launch {
namespace {

using testing::Runfile;
using Cmd = testing::Command;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fake {
  std::string dir = MakeFreshDir("mps-test");
  std::string log = dir + "/calls.log";
  std::vector<std::pair<std::string, std::string>> Env() const {
    return {{"DDP_MPS_CONTROL", Runfile("core/launch/testdata/fake_mps_control.sh")}, {"FAKE_MPS_LOG", log}};
  }
};

// ddprun with two ranks that print the MPS folders they inherited and report
// attaching, as an NCCL rank on a shared GPU does (comm/nccl_comm.cc).
Cmd Ranks(const std::string& backend, std::vector<std::pair<std::string, std::string>> env) {
  Cmd c({Runfile("tools/ddprun/ddprun"), "--nproc", "2", "--backend", backend, "--share-gpu", "--", "/bin/sh",
         "-c",
         "echo PIPE=${CUDA_MPS_PIPE_DIRECTORY:-none}; "
         "if [ -n \"${DDP_MPS_REPORT:-}\" ]; then echo \"$$ mps=1\" >>\"$DDP_MPS_REPORT\"; fi"},
        std::move(env));
  for (const char* var : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "DDP_MPS", "DDP_MPS_REPORT"}) {
    bool given = false;
    for (const auto& kv : c.env) given = given || kv.first == var;
    if (!given) c.unset_env.push_back(var);  // the child unsets after it sets
  }
  c.deadline = std::chrono::seconds(60);
  return c;
}

std::set<std::string> Pipes(const std::string& out) {
  std::set<std::string> pipes;
  const std::regex re("PIPE=([^\n]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) pipes.insert((*it)[1]);
  return pipes;
}

TEST(Mps, StartedForSharedNcclRanksAndStoppedWhenTheLauncherExits) {
  const Fake fake;
  const auto r = testing::RunCommand(Ranks("nccl", fake.Env())).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  const auto pipes = Pipes(r.stdout_text);
  ASSERT_EQ(pipes.size(), 1u) << "both ranks see the one daemon: " << r.stdout_text;
  const std::string pipe = *pipes.begin();
  // Under /tmp, wherever TMPDIR points: a Unix socket's path must be short.
  EXPECT_EQ(pipe.rfind("/tmp/ddp-mps-", 0), 0u) << pipe;
  EXPECT_NE(r.stderr_text.find("[ddp::launch] CUDA MPS started ("), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("pipe " + pipe + "): the ranks' kernels share the GPU at once; stopped at exit"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("[ddp::launch] CUDA MPS stopped (quit): 2 of 2 rank processes attached to CUDA MPS"),
            std::string::npos)
      << r.stderr_text;
  const std::string calls = Read(fake.log);
  EXPECT_NE(calls.find("daemon start pipe=" + pipe + " log="), std::string::npos) << calls;
  EXPECT_NE(calls.find(" token=set\n"), std::string::npos) << "the guardian can find it: " << calls;
  EXPECT_NE(calls.find("client quit\ndaemon quit\n"), std::string::npos) << calls;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(pipe).parent_path())) << "folder left: " << pipe;
}

TEST(Mps, RanksThatSayTheyDidNotAttachAreCounted) {
  const std::string dir = MakeFreshDir("mps-report");
  std::ofstream(dir + "/attached") << "101 mps=1\n102 mps=0\n103 mps=1\n";
  EXPECT_EQ(AttachedSummary(dir + "/attached"), "2 of 3 rank processes attached to CUDA MPS");
  EXPECT_EQ(AttachedSummary(dir + "/missing"), "");
}

TEST(Mps, OffUnavailableFailingOrAlreadyRunningAreSaidAndTheRunGoesOn) {
  const Fake fake;
  auto env = fake.Env();
  env.emplace_back("DDP_MPS", "0");
  auto r = testing::RunCommand(Ranks("nccl", env)).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("[ddp::launch] CUDA MPS off (DDP_MPS=0): ranks sharing a GPU are time-sliced (one "
                               "H100, 2026-11-26: 90-140 ms per 4 KB allreduce at W = 4)"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("; the ranks kept off any running daemon"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(Pipes(r.stdout_text), std::set<std::string>{kNoDaemonDir});
  // Off even where a daemon runs: the ranks are pointed away from it.
  const std::string daemon = MakeFreshDir("mps-off-running");
  std::ofstream(daemon + "/control") << "";
  env.emplace_back("CUDA_MPS_PIPE_DIRECTORY", daemon);
  r = testing::RunCommand(Ranks("nccl", env)).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_EQ(Pipes(r.stdout_text), std::set<std::string>{kNoDaemonDir});

  r = testing::RunCommand(Ranks("nccl", {{"DDP_MPS_CONTROL", "/nonexistent/control"}})).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("CUDA MPS not available (DDP_MPS_CONTROL='/nonexistent/control' is not executable): "
                               "ranks sharing a GPU are time-sliced"),
            std::string::npos)
      << r.stderr_text;

  env = fake.Env();
  env.emplace_back("FAKE_MPS_FAIL", "1");
  r = testing::RunCommand(Ranks("nccl", env)).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(" -f exited at once: fake: cannot open the GPU)"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(Pipes(r.stdout_text), std::set<std::string>{"none"});

  // A daemon someone else runs: used, never started or stopped here.
  const std::string running = MakeFreshDir("mps-running");
  std::ofstream(running + "/control") << "";
  std::ofstream(fake.log, std::ios::trunc) << "";
  env = fake.Env();
  env.emplace_back("CUDA_MPS_PIPE_DIRECTORY", running);
  const Cmd existing = Ranks("nccl", env);
  r = testing::RunCommand(existing).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("CUDA MPS: using the daemon at " + running + " (started elsewhere, left running)"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(Pipes(r.stdout_text), std::set<std::string>{running});
  EXPECT_EQ(Read(fake.log), "");
  EXPECT_TRUE(std::filesystem::exists(running + "/control"));
}

TEST(Mps, RequiredButMissingOrBadValueIsExit2) {
  auto r = testing::RunCommand(Ranks("nccl", {{"DDP_MPS", "1"}, {"DDP_MPS_CONTROL", "/nonexistent/control"}}))
               .outcome;
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("DDP_MPS=1 but no CUDA MPS daemon: DDP_MPS_CONTROL='/nonexistent/control' is not "
                               "executable"),
            std::string::npos)
      << r.stderr_text;
  r = testing::RunCommand(Ranks("nccl", {{"DDP_MPS", "maybe"}})).outcome;
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("DDP_MPS='maybe' must be auto, 0 or 1"), std::string::npos) << r.stderr_text;
}

TEST(Mps, GlooRanksNeverStartIt) {
  const Fake fake;
  const auto r = testing::RunCommand(Ranks("gloo", fake.Env())).outcome;
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("CUDA MPS"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(Read(fake.log), "");
}

// SpawnRanks (tests, pair binaries, benchmarks) starts it too; run in a
// child so that this process's once-only decision stays untouched.
TEST(Mps, SpawnRanksStartsItForSharedNcclRanks) {
  const Fake fake;
  const std::string out = fake.dir + "/ranks.txt";
  SuperviseOptions so;
  so.deadline = std::chrono::seconds(60);
  const auto env = fake.Env();
  const RunResult r = Supervise({StartChild(0, [&] {
                                  for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
                                  for (const char* k : {"CUDA_MPS_PIPE_DIRECTORY", "DDP_MPS"}) ::unsetenv(k);
                                  SpawnOptions o;
                                  o.backend = "nccl";
                                  o.share_gpu = true;
                                  const RunResult ranks = SpawnRanks(2, [&](const RankEnv&) {
                                    const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
                                    std::ofstream(out, std::ios::app) << (pipe ? pipe : "none") << "\n";
                                    return 0;
                                  }, o);
                                  StopMps();
                                  return ranks.all_ok() ? 0 : 1;
                                })},
                                so);
  ASSERT_TRUE(r.all_ok()) << r.Summary() << r.ranks[0].stderr_text;
  const std::string seen = Read(out);
  EXPECT_EQ(seen.find("none"), std::string::npos) << seen;
  EXPECT_NE(r.ranks[0].stderr_text.find("CUDA MPS started ("), std::string::npos) << r.ranks[0].stderr_text;
  EXPECT_NE(r.ranks[0].stderr_text.find("CUDA MPS stopped (quit): no NCCL rank reported whether it attached"),
            std::string::npos)
      << r.ranks[0].stderr_text;
  EXPECT_NE(Read(fake.log).find("client quit\ndaemon quit\n"), std::string::npos) << Read(fake.log);
}

}  // namespace
}  // namespace ddp::launch
