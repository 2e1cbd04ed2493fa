// ddprun end to end: the example on 4 ranks, fail-fast with the failing
// rank's exit code — the rank that failed first, not a peer that failed
// because of it —, the overall timeout (124) holding even when a process the
// ranks started keeps their output open, SIGTERM forwarding, no process of
// the run left behind, run ids that cannot be reused while their keys exist
// and keys deleted afterwards, and bad input (exit 2, a clear message, no
// hang). Faults (stalls, store, launcher death): core/launch:faults_test.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "core/launch/spawn.h"
#include "core/launch/supervise.h"
#include "core/launch/testing/redis_server.h"
#include "core/launch/testing/run_command.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace {

using ddp::launch::RankOutcome;

using ddp::launch::testing::Runfile;
using Cmd = ddp::launch::testing::Command;

const std::string kDdprun = "tools/ddprun/ddprun";
const std::string kProgram = "tools/ddprun/rank_program";
const std::string kExample = "core/comm/examples/allreduce_example";

// Runs a command to completion and returns what happened to it.
RankOutcome RunCmd(const Cmd& cmd) { return ddp::launch::testing::RunCommand(cmd).outcome; }

std::vector<std::string> Ddprun(std::vector<std::string> args) {
  args.insert(args.begin(), Runfile(kDdprun));
  return args;
}

// Every "PID n" / "GRANDCHILD n" a rank printed must be gone.
void ExpectAllGone(const std::string& out, int expected_pids) {
  const std::regex re("(PID|GRANDCHILD) ([0-9]+)");
  int seen = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) {
    const pid_t pid = std::stoi((*it)[2]);
    ++seen;
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1) << (*it)[0] << " is still alive";
    EXPECT_EQ(errno, ESRCH) << (*it)[0];
  }
  EXPECT_EQ(seen, expected_pids) << out;
}

TEST(Ddprun, ExampleOnFourRanksPrintsTheAllreduce) {
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "4", "--", Runfile(kExample)})));
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  for (int k = 0; k < 4; ++k) {
    EXPECT_NE(r.stdout_text.find("[rank " + std::to_string(k) + "] rank " + std::to_string(k) +
                                 "/4 on gloo: allreduce(sum of rank+1) = 10 (expected 10), "
                                 "allgather(rank) = [0, 1, 2, 3]\n"),
              std::string::npos)
        << r.stdout_text;
  }
}

TEST(Ddprun, FailingRankStopsAllAndGivesItsExitCode) {
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "3", "--kill-grace", "1", "--", Runfile(kProgram),
                              "--fail-rank", "1", "--fail-how", "exit3", "--others", "hang",
                              "--grandchild"})));
  ASSERT_TRUE(r.exited) << r.Describe();
  EXPECT_EQ(r.exit_code, 3) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("first failure: rank 1"), std::string::npos) << r.stderr_text;
  ExpectAllGone(r.stdout_text, 6);
}

class DeadRank : public ::testing::TestWithParam<std::string> {};

TEST_P(DeadRank, PeersStoppedExitIs128PlusSignal) {
  const std::string how = GetParam();
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "3", "--collective-timeout", "2", "--", Runfile(kProgram),
                              "--fail-rank", "2", "--fail-how", how, "--others", "collective"})));
  ASSERT_TRUE(r.exited) << r.Describe();
  EXPECT_EQ(r.exit_code, how == "abort" ? 128 + SIGABRT : 128 + SIGKILL) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("first failure: rank 2"), std::string::npos) << r.stderr_text;
  ExpectAllGone(r.stdout_text, 3);
}

INSTANTIATE_TEST_SUITE_P(How, DeadRank, ::testing::Values("abort", "sigkill"));

// The case: rank 1 exits 3 while its peers are inside collectives;
// they fail at once with a peer error (often before rank 1 is reaped). The
// blame and the exit code must be rank 1's, every time.
TEST(Ddprun, BlamesTheRankWhoseFailureWasItsOwn) {
  for (int run = 0; run < 10; ++run) {
    const auto r = RunCmd(Cmd(Ddprun({"--nproc", "4", "--collective-timeout", "3", "--",
                                      Runfile(kProgram), "--fail-rank", "1", "--fail-how", "exit3",
                                      "--others", "collective"})));
    ASSERT_TRUE(r.exited) << r.Describe();
    EXPECT_EQ(r.exit_code, 3) << "run " << run << ": " << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("first failure: rank 1 (exit 3)"), std::string::npos)
        << "run " << run << ": " << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("exit 3, stopped by the launcher"), std::string::npos)
        << r.stderr_text;
  }
}

// A rank's child in a new session keeps the ranks' output open after they
// exit: ddprun must still end at once (it used to wait for the child, 40 s),
// and the child must not survive.
TEST(Ddprun, AnEscapedChildCannotHoldTheRunOpen) {
  const std::string marker = ddp::launch::MakeFreshDir("escaped") + "/pid";
  const auto start = std::chrono::steady_clock::now();
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "2", "--timeout", "5", "--", "/bin/bash", "-c",
                                    "setsid sleep 40 & echo $! > " + marker + ".$RANK; exit 0"})));
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_LT(secs, 4.0);
  for (int rank : {0, 1}) {
    std::ifstream in(marker + "." + std::to_string(rank));
    pid_t pid = 0;
    ASSERT_TRUE(in >> pid);
    errno = 0;
    EXPECT_TRUE(::kill(pid, 0) == -1 && errno == ESRCH) << "setsid'd sleep " << pid << " survived";
  }
  // The same with SIGTERM to ddprun: forwarded, and ddprun ends at once.
  const std::string ready = ddp::launch::MakeFreshDir("ready");
  Cmd term{Ddprun({"--nproc", "2", "--", "/bin/bash", "-c",
                   "setsid sleep 40 & touch " + ready + "/r$RANK; sleep 40"})};
  term.while_running = [ready](pid_t pid) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < limit &&
           !(std::filesystem::exists(ready + "/r0") && std::filesystem::exists(ready + "/r1"))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid, SIGTERM);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto t = RunCmd(term);
  EXPECT_EQ(t.exit_code, 128 + SIGTERM) << t.stderr_text;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(Ddprun, OverallTimeoutExits124AndKillsEverything) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "2", "--timeout", "1", "--kill-grace", "0.5", "--",
                              Runfile(kProgram), "--others", "hang", "--grandchild"})));
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.exited) << r.Describe();
  EXPECT_EQ(r.exit_code, 124) << r.stderr_text;
  EXPECT_LT(secs, 10.0);
  EXPECT_NE(r.stderr_text.find("overall deadline expired"), std::string::npos) << r.stderr_text;
  ExpectAllGone(r.stdout_text, 4);
}

TEST(Ddprun, ForwardsSigtermToRanks) {
  const std::string ready = ddp::launch::MakeFreshDir("ready");
  Cmd cmd{Ddprun({"--nproc", "2", "--", Runfile(kProgram), "--others", "hang", "--ready-dir",
                  ready})};
  cmd.while_running = [ready](pid_t pid) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < limit &&
           !(std::filesystem::exists(ready + "/ready-0") &&
             std::filesystem::exists(ready + "/ready-1"))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid, SIGTERM);
  };
  const auto r = RunCmd(cmd);
  ASSERT_TRUE(r.exited) << r.Describe() << r.stderr_text;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("forwarded a signal"), std::string::npos) << r.stderr_text;
  ExpectAllGone(r.stdout_text, 2);
}

// Issue 59 (14): --rdzv naming a folder that does not exist: the store
// creates it, and the run used to leave it (and its parents) behind, empty.
// What ddprun created, it removes; a folder that existed stays.
TEST(Ddprun, ARdzvFolderItCreatedIsRemovedAfterTheRun) {
  const std::string base = ddp::launch::MakeFreshDir("rdzv-missing");
  const auto r = RunCmd(Cmd(Ddprun({"--nproc", "2", "--rdzv", base + "/m/a/b", "--", "/bin/true"})));
  EXPECT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(base + "/m")) << "left behind: " << base << "/m";
  EXPECT_TRUE(std::filesystem::exists(base));
  const auto again = RunCmd(Cmd(Ddprun({"--nproc", "2", "--rdzv", base, "--", "/bin/true"})));
  EXPECT_TRUE(again.ok()) << again.Describe() << again.stderr_text;
  EXPECT_TRUE(std::filesystem::is_directory(base)) << "an existing --rdzv folder was removed";
}

TEST(Ddprun, HelpExitsZero) {
  const auto r = RunCmd(Cmd(Ddprun({"--help"})));
  EXPECT_TRUE(r.ok());
  EXPECT_NE(r.stdout_text.find("usage: ddprun --nproc N"), std::string::npos);
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(Ddprun, BadInputExits2WithAMessage) {
  const std::string file = ddp::launch::MakeFreshDir("bad") + "/a_file";
  std::ofstream(file) << "x";
  const std::vector<BadCase> cases = {
      {{"--nproc", "0", "--", "/bin/true"}, "--nproc 0 must be >= 1"},
      {{"--nproc", "-1", "--", "/bin/true"}, "--nproc -1 must be >= 1"},
      {{"--nproc", "two", "--", "/bin/true"}, "--nproc='two' is not a non-negative integer"},
      {{"--nproc", "2", "--backend", "mpi", "--", "/bin/true"},
       "--backend 'mpi': allowed values are gloo, nccl"},
      {{"--nproc", "2", "--rdzv", "redis://127.0.0.1:1", "--", "/bin/true"},
       "cannot reach Redis rendezvous redis://127.0.0.1:1"},
      {{"--nproc", "2", "--rdzv", file + "/sub", "--", "/bin/true"},
       "rendezvous directory '" + file + "/sub' cannot be created"},
      {{"--nproc", "2", "--rdzv", "tcp://x:1", "--", "/bin/true"}, "has an unknown scheme"},
      {{"--nproc", "2", "--", "/no/such/binary"}, "'/no/such/binary' is not an executable file"},
      {{"--nproc", "2", "--", "no_such_binary_anywhere"}, "not found on PATH"},
      {{"--nproc", "2", "--timeout", "0", "--", "/bin/true"}, "--timeout '0' must be a positive"},
      {{"--nproc", "2", "--timeout", "1e10", "--", "/bin/true"},
       "--timeout '1e10' must be a positive number of seconds, at most 604800"},
      {{"--nproc", "2", "--kill-grace", "1e300", "--", "/bin/true"},
       "--kill-grace '1e300' must be a positive number of seconds, at most 3600"},
      {{"--nproc", "2", "--collective-timeout", "inf", "--", "/bin/true"},
       "--collective-timeout 'inf' must be a positive number of seconds"},
      {{"--nproc", "1025", "--", "/bin/true"}, "--nproc 1025 must be <= 1024"},
      {{"--nproc", "2", "--run-id", "a/b", "--", "/bin/true"}, "--run-id 'a/b' must be 1 to 100"},
      {{"--nproc", "2", "--frobnicate"}, "unknown argument '--frobnicate'"},
      {{"--nproc", "2"}, "no command"},
      {{"--", "/bin/true"}, "--nproc N is required"},
      {{"--nproc", "2", "--nnodes", "0", "--", "/bin/true"},
       "--nnodes '0' must be an integer in [1, 1024]"},
      {{"--nproc", "2", "--nnodes", "2", "--rdzv", "/tmp/x", "--", "/bin/true"},
       "--nnodes 2 needs --node_rank K (this host's index, 0 <= K < 2)"},
      {{"--nproc", "2", "--nnodes", "2", "--node_rank", "2", "--rdzv", "/tmp/x", "--",
        "/bin/true"},
       "--node_rank '2' must be an integer in [0, 1]"},
      {{"--nproc", "2", "--nnodes", "2", "--node-rank", "x", "--rdzv", "/tmp/x", "--",
        "/bin/true"},
       "--node_rank 'x' must be an integer in [0, 1]"},
      {{"--nproc", "2", "--nnodes", "2", "--node_rank", "1", "--", "/bin/true"},
       "--nnodes 2 needs --rdzv redis://HOST:PORT"},
      {{"--nproc", "2", "--node_rank", "1", "--", "/bin/true"},
       "--node_rank 1 needs --nnodes M with 1 < M"},
      // Issue 35: strictly decimal numbers ("0x10" was 16 s), no repeated flag
      // (the last one won).
      {{"--nproc", "2", "--collective-timeout", "0x10", "--", "/bin/true"},
       "--collective-timeout '0x10' must be a positive number of seconds"},
      {{"--nproc", "2", "--timeout", " 5", "--", "/bin/true"},
       "--timeout ' 5' must be a positive number of seconds"},
      {{"--nproc", "2", "--timeout", "5", "--timeout", "600", "--", "/bin/true"},
       "--timeout given more than once"},
      {{"--nproc", "2", "--nproc", "4", "--", "/bin/true"}, "--nproc given more than once"},
      {{"--nproc", "2", "--nnodes", "2", "--node_rank", "0", "--node-rank", "1", "--rdzv",
        "/tmp/x", "--", "/bin/true"},
       "--node_rank given more than once"},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = RunCmd(Cmd(Ddprun(c.args)));
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(r.exited && r.exit_code == 2) << c.message << ": " << r.Describe();
    EXPECT_NE(r.stderr_text.find(c.message), std::string::npos) << r.stderr_text;
    EXPECT_LT(secs, 10.0) << c.message;
  }
}

// Shared-GPU mode under ddprun: DDP_SHARE_GPU=1 gives each rank its own
// NCCL_HOSTID, none without it; a bad value is exit 2 naming the variable.
// (The automatic choice on fewer GPUs than ranks: core/launch:share_gpu_test.)
TEST(Ddprun, DdpShareGpuGivesEachRankItsOwnNcclHostId) {
  const auto args =
      Ddprun({"--nproc", "2", "--", "/bin/sh", "-c", "echo HOSTID=${NCCL_HOSTID:-none}"});
  auto r = RunCmd(Cmd(args, {{"DDP_SHARE_GPU", "1"}}));
  EXPECT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("HOSTID=ddp-rank-0"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("HOSTID=ddp-rank-1"), std::string::npos) << r.stdout_text;
  Cmd plain(args);
  plain.unset_env = {"DDP_SHARE_GPU", "NCCL_HOSTID"};
  r = RunCmd(plain);
  EXPECT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("HOSTID=ddp-rank"), std::string::npos) << r.stdout_text;
  r = RunCmd(Cmd(args, {{"DDP_SHARE_GPU", "maybe"}}));
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r.Describe();
  EXPECT_NE(r.stderr_text.find("DDP_SHARE_GPU='maybe' must be 0 or 1"), std::string::npos)
      << r.stderr_text;
}

// The example as one rank, configured by the environment: bad values exit 2.
TEST(RankEnvironment, BadValuesExit2WithAMessage) {
  const std::string dir = ddp::launch::MakeFreshDir("env");
  const std::string file = dir + "/a_file";
  std::ofstream(file) << "x";
  struct EnvCase {
    std::vector<std::pair<std::string, std::string>> env;
    std::string message;
  };
  const std::vector<EnvCase> cases = {
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"DDP_RDZV", dir}}, "RANK=2 must be in [0, WORLD_SIZE=2)"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"DDP_RDZV", dir}}, "WORLD_SIZE=0 must be >= 1"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", dir}, {"DDP_BACKEND", "mpi"}},
       "unknown backend 'mpi': allowed values are gloo, nccl"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", "redis://127.0.0.1:1"}},
       "cannot reach Redis rendezvous"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", file + "/sub"}}, "cannot be created"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}}, "DDP_RDZV is not set"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", dir}, {"DDP_PITFALLS_TIMEOUT", "soon"}},
       "DDP_PITFALLS_TIMEOUT='soon' must be a positive number of seconds"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", dir}, {"DDP_PITFALLS_CHECK", "yes"}},
       "DDP_PITFALLS_CHECK='yes' must be 0 or 1"},
      // Issue 35: hex was 16 s; RANK alone made the example spawn its own
      // ranks; more local ranks than ranks waited out the rendezvous.
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", dir}, {"DDP_PITFALLS_TIMEOUT", "0x10"}},
       "DDP_PITFALLS_TIMEOUT='0x10' must be a positive number of seconds"},
      {{{"RANK", "0"}, {"DDP_RDZV", dir}},
       "RANK and WORLD_SIZE must both be set (got RANK=0, WORLD_SIZE=<unset>)"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}, {"DDP_RDZV", dir}},
       "LOCAL_WORLD_SIZE=4 must be <= WORLD_SIZE=2"},
  };
  for (const auto& c : cases) {
    const auto r = RunCmd(Cmd({Runfile(kExample)}, c.env));
    EXPECT_TRUE(r.exited && r.exit_code == 2) << c.message << ": " << r.Describe() << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(c.message), std::string::npos) << r.stderr_text;
  }
}

// The fixture itself: a typo in a behaviour, a flag without its value, an
// unknown flag or no rank environment is exit 2 naming it (a typo must not
// pass as "exit 0"); --help is exit 0.
TEST(RankProgram, BadInputExit2WithAMessage) {
  struct FlagCase {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<FlagCase> cases = {
      {{"--others", "hnag"}, "--others hnag: allowed exit3, abort, sigkill, hang, ok, collective, new-comms"},
      {{"--fail-how", "exit4"}, "--fail-how exit4: allowed"},
      {{"--fail-rank"}, "--fail-rank needs a value"},
      {{"--bogus"}, "unknown flag --bogus"},
      {{}, "RANK and WORLD_SIZE must both be set"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {Runfile(kProgram)};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Cmd cmd(argv);
    cmd.unset_env = {"RANK", "WORLD_SIZE"};
    const auto r = RunCmd(cmd);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << c.message << ": " << r.Describe() << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(c.message), std::string::npos) << r.stderr_text;
  }
  const auto help = RunCmd(Cmd({Runfile(kProgram), "--help"}));
  EXPECT_TRUE(help.ok()) << help.Describe();
  EXPECT_NE(help.stdout_text.find("usage: rank_program"), std::string::npos) << help.stdout_text;
}

// Several-host rendezvous through Redis, on a loopback redis-server started
// here: the run works, its keys are gone afterwards, and its run id cannot
// be reused while another run's keys are still in the store.
TEST(Ddprun, RedisRendezvous) {
  std::string why;
  auto redis = ddp::launch::testing::RedisServer::Start(&why);
  if (!redis) GTEST_SKIP() << "skipped: " << why;
  // With a Redis store Gloo binds to this host's name by default, which does
  // not resolve everywhere (a minimal chroot, some containers): this test is
  // about the rendezvous, so the ranks bind to loopback like the server.
  Cmd cmd(Ddprun({"--nproc", "3", "--rdzv", redis->spec(), "--run-id", "job-7", "--",
                  Runfile(kExample)}),
          {{"DDP_GLOO_ADDR", "127.0.0.1"}});
  const auto r = RunCmd(cmd);
  ASSERT_TRUE(r.ok()) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("[rank 2] rank 2/3 on gloo: allreduce(sum of rank+1) = 6"),
            std::string::npos)
      << r.stdout_text;
  auto store = ddp::store::OpenStore(redis->spec(), std::chrono::seconds(5));
  EXPECT_EQ(store->DeletePrefix("job-7/"), 0) << "the finished run's keys were left";
  // A run id whose keys are still there (a run that is going on, or one
  // whose launcher was killed): refused, naming the owner.
  store->Put("job-8/ddprun", "ddprun pid 1 on elsewhere");
  const auto again = RunCmd(Cmd(Ddprun({"--nproc", "2", "--rdzv", redis->spec(), "--run-id",
                                        "job-8", "--", Runfile(kExample)}),
                                {{"DDP_GLOO_ADDR", "127.0.0.1"}}));
  EXPECT_EQ(again.exit_code, 2) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("--run-id 'job-8' was already used in " + redis->spec() +
                                   " (by ddprun pid 1 on elsewhere)"),
            std::string::npos)
      << again.stderr_text;
  EXPECT_EQ(store->TryGet("job-8/ddprun"), "ddprun pid 1 on elsewhere") << "another run's key touched";
}

// Issue 35: a Redis that demands a password is exit 2 (as an unreachable one
// is), for ddprun and for a rank started by another launcher, not exit 1 at
// the first SET.
TEST(Ddprun, ARedisThatDemandsAPasswordExits2) {
  std::string why;
  ddp::launch::testing::RedisPlacement where;
  where.extra_args = {"--requirepass", "secret"};
  auto redis = ddp::launch::testing::RedisServer::Start(&why, where);
  if (!redis) GTEST_SKIP() << "skipped: " << why;
  const std::string message = "cannot reach Redis rendezvous " + redis->spec() +
                              ": refused PING: NOAUTH";
  const auto launcher =
      RunCmd(Cmd(Ddprun({"--nproc", "2", "--rdzv", redis->spec(), "--", Runfile(kExample)})));
  EXPECT_TRUE(launcher.exited && launcher.exit_code == 2) << launcher.Describe();
  EXPECT_NE(launcher.stderr_text.find(message), std::string::npos) << launcher.stderr_text;
  const auto rank = RunCmd(Cmd({Runfile(kExample)}, {{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                                     {"DDP_RDZV", redis->spec()}}));
  EXPECT_TRUE(rank.exited && rank.exit_code == 2) << rank.Describe() << rank.stderr_text;
  EXPECT_NE(rank.stderr_text.find(message), std::string::npos) << rank.stderr_text;
}

// Two hosts without a scheduler, here both on loopback: two ddprun
// processes with --nnodes 2 and their own --node_rank meet in Redis as one
// world of 4 (global ranks 0-1 on node 0, 2-3 on node 1), and the last one
// out deletes the run's keys.
TEST(Ddprun, TwoNodesMeetThroughRedis) {
  std::string why;
  auto redis = ddp::launch::testing::RedisServer::Start(&why);
  if (!redis) GTEST_SKIP() << "skipped: " << why;
  auto node = [&](int k) {
    Cmd cmd(Ddprun({"--nnodes", "2", "--node_rank", std::to_string(k), "--nproc", "2", "--rdzv",
                    redis->spec(), "--timeout", "60", "--", Runfile(kExample)}),
            {{"DDP_GLOO_ADDR", "127.0.0.1"}});
    return RunCmd(cmd);
  };
  RankOutcome second;
  std::thread other([&] { second = node(1); });
  const RankOutcome first = node(0);
  other.join();
  ASSERT_TRUE(first.ok()) << first.Describe() << first.stderr_text;
  ASSERT_TRUE(second.ok()) << second.Describe() << second.stderr_text;
  EXPECT_NE(first.stdout_text.find("[rank 1] rank 1/4 on gloo: allreduce(sum of rank+1) = 10"),
            std::string::npos)
      << first.stdout_text;
  EXPECT_NE(second.stdout_text.find("[rank 3] rank 3/4 on gloo: allreduce(sum of rank+1) = 10 "
                                    "(expected 10), allgather(rank) = [0, 1, 2, 3]"),
            std::string::npos)
      << second.stdout_text;
  auto store = ddp::store::OpenStore(redis->spec(), std::chrono::seconds(5));
  EXPECT_EQ(store->DeletePrefix("ddprun/"), 0) << "the finished run's keys were left";
  // One host's part of the run id still claimed: that host is refused.
  store->Put("ddprun/ddprun/node0001", "ddprun pid 1 on elsewhere");
  const auto again = node(1);
  EXPECT_EQ(again.exit_code, 2) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("--run-id 'ddprun' with --node_rank 1 was already used"),
            std::string::npos)
      << again.stderr_text;
}

}  // namespace
