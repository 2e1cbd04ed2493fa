// RankEnv parsing, store semantics (overwriting Put, non-blocking TryGet,
// bounded waits) and SpawnRanks outcomes (exit codes, signals, deadline).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "core/cli/config_error.h"
#include "core/launch/rank_env.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace ddp::launch {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string ErrorOf(const std::map<std::string, std::string>& vars) {
  try {
    RankEnvFromEnvironment(FakeEnv(vars));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(RankEnv, ReadsTorchrunVariables) {
  const auto env = RankEnvFromEnvironment(FakeEnv({{"RANK", "3"},
                                                   {"WORLD_SIZE", "8"},
                                                   {"LOCAL_RANK", "1"},
                                                   {"LOCAL_WORLD_SIZE", "2"},
                                                   {"DDP_RDZV", "redis://h:7"},
                                                   {"DDP_RUN_ID", "job7"}}));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.rdzv, "redis://h:7");
  EXPECT_EQ(env.run_id, "job7");
  // Without LOCAL_*: one host.
  const auto one = RankEnvFromEnvironment(FakeEnv({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}));
  EXPECT_EQ(one.local_rank, 1);
  EXPECT_EQ(one.local_world_size, 2);
}

TEST(RankEnv, BadValuesNameTheVariable) {
  EXPECT_EQ(ErrorOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}),
            "RANK=2 must be in [0, WORLD_SIZE=2)");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"DDP_RDZV", "/d"}}),
            "WORLD_SIZE=0 must be >= 1");
  EXPECT_EQ(ErrorOf({{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}),
            "RANK=-1 must be in [0, WORLD_SIZE=2)");
  EXPECT_EQ(ErrorOf({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}),
            "RANK='x' is not a non-negative integer");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
            "DDP_RDZV is not set: give a store directory shared by all ranks, or redis://host:port");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}}),
            "RANK and WORLD_SIZE must both be set (got RANK=0, WORLD_SIZE=<unset>)");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"},
                     {"LOCAL_WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}),
            "LOCAL_RANK=2 must be in [0, LOCAL_WORLD_SIZE=2)");
  EXPECT_EQ(ErrorOf({{"WORLD_SIZE", "2"}, {"DDP_RDZV", "/d"}}),
            "RANK and WORLD_SIZE must both be set (got RANK=<unset>, WORLD_SIZE=2)");
  EXPECT_TRUE(LaunchedAsRank(FakeEnv({{"RANK", "0"}, {"WORLD_SIZE", "1"}})));
  // Issue 35: RANK alone was no launch at all (the binary spawned its own
  // ranks); now it is a launch whose variables are rejected, naming both.
  EXPECT_TRUE(LaunchedAsRank(FakeEnv({{"RANK", "0"}})));
  EXPECT_TRUE(LaunchedAsRank(FakeEnv({{"WORLD_SIZE", "4"}})));
  EXPECT_FALSE(LaunchedAsRank(FakeEnv({{"LOCAL_RANK", "0"}})));
  // Issue 35: more local ranks than ranks was accepted until the rendezvous
  // timed out.
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                     {"LOCAL_WORLD_SIZE", "4"}, {"DDP_RDZV", "/d"}}),
            "LOCAL_WORLD_SIZE=4 must be <= WORLD_SIZE=2");
}

// What srun exports for task 5 of `srun -N 3 -n 7 --ntasks-per-node=3`
// (nodes 0 and 1 run 3 tasks, node 2 runs 1), on node 1.
std::map<std::string, std::string> SrunTask5() {
  return {{"SLURM_PROCID", "5"},      {"SLURM_NTASKS", "7"},  {"SLURM_LOCALID", "2"},
          {"SLURM_NODEID", "1"},      {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_TASKS_PER_NODE", "3(x2),1"}, {"SLURM_TASKS_PER_NODE", "3(x2),1"},
          {"DDP_RDZV", "redis://10.0.0.1:6379"}};
}

TEST(RankEnv, ReadsSrunVariables) {
  ASSERT_TRUE(LaunchedAsRank(FakeEnv(SrunTask5())));
  const auto env = RankEnvFromEnvironment(FakeEnv(SrunTask5()));
  EXPECT_EQ(env.launcher, Launcher::kSlurm);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 7);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 3);
  EXPECT_EQ(env.node_rank, 1);
  EXPECT_EQ(env.rdzv, "redis://10.0.0.1:6379");
  EXPECT_EQ(env.run_id, "slurm-4242.0");  // two job steps on one store stay apart
  auto last = SrunTask5();
  last["SLURM_PROCID"] = "6";
  last["SLURM_LOCALID"] = "0";
  last["SLURM_NODEID"] = "2";
  EXPECT_EQ(RankEnvFromEnvironment(FakeEnv(last)).local_world_size, 1);
  auto named = SrunTask5();
  named["DDP_RUN_ID"] = "mine";
  EXPECT_EQ(RankEnvFromEnvironment(FakeEnv(named)).run_id, "mine");
}

TEST(RankEnv, SlurmOutsideAStepIsNotARank) {
  // A batch script carries SLURM_PROCID=0 and the job's SLURM_NTASKS but no
  // step: a binary started there spawns its own ranks.
  auto batch = SrunTask5();
  batch.erase("SLURM_STEP_ID");
  batch["SLURM_PROCID"] = "0";
  EXPECT_FALSE(LaunchedAsRank(FakeEnv(batch)));
}

TEST(RankEnv, TorchrunVariablesWinOverSlurm) {
  // torchrun started by srun: torchrun's numbering is the one the ranks share.
  auto env = SrunTask5();
  env["RANK"] = "1";
  env["WORLD_SIZE"] = "4";
  env["GROUP_RANK"] = "0";
  const auto r = RankEnvFromEnvironment(FakeEnv(env));
  EXPECT_EQ(r.launcher, Launcher::kTorchrun);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.node_rank, 0);
}

TEST(RankEnv, SlurmErrorsNameSlurmVariables) {
  auto bad = SrunTask5();
  bad["SLURM_PROCID"] = "7";
  EXPECT_EQ(ErrorOf(bad), "SLURM_PROCID=7 must be in [0, SLURM_NTASKS=7)");
  bad = SrunTask5();
  bad["SLURM_STEP_TASKS_PER_NODE"] = "3(x2";
  EXPECT_EQ(ErrorOf(bad), "SLURM_STEP_TASKS_PER_NODE='3(x2' is not a SLURM tasks-per-node list");
  bad["SLURM_STEP_TASKS_PER_NODE"] = "3";
  EXPECT_EQ(ErrorOf(bad),
            "SLURM_STEP_TASKS_PER_NODE='3' lists 1 nodes; SLURM_NODEID=1 is not among them");
  bad = SrunTask5();
  bad.erase("DDP_RDZV");
  EXPECT_EQ(ErrorOf(bad),
            "DDP_RDZV is not set: give a store directory shared by all ranks, or redis://host:port");
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(SlurmTasksOnNode("4", 0), 4);
}

TEST(RankEnv, TorchrunWithoutDdpRdzvSaysWhatIsMissing) {
  // What torchrun --nnodes 2 --nproc-per-node 2 exports to rank 3.
  std::map<std::string, std::string> vars = {
      {"RANK", "3"},         {"WORLD_SIZE", "4"},       {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},   {"MASTER_ADDR", "node0"},
      {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "job9"}};
  EXPECT_EQ(ErrorOf(vars),
            "DDP_RDZV is not set: MASTER_ADDR:MASTER_PORT (node0:29500) is torchrun's own c10d "
            "TCPStore, which this suite does not speak; run redis-server on a host every rank "
            "reaches and export DDP_RDZV=redis://node0:6379 (or a directory, on one host)");
  vars["DDP_RDZV"] = "redis://node0:6379";
  const auto env = RankEnvFromEnvironment(FakeEnv(vars));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.node_rank, 1);
  EXPECT_EQ(env.run_id, "torchrun-job9");
  vars["TORCHELASTIC_RUN_ID"] = "none";  // torchrun's default --rdzv-id
  EXPECT_EQ(RankEnvFromEnvironment(FakeEnv(vars)).run_id, "run");
}

TEST(Store, RedisSpecParsing) {
  EXPECT_FALSE(store::ParseRedisSpec("/tmp/dir").has_value());
  const auto a = store::ParseRedisSpec("redis://node1:6400");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "node1");
  EXPECT_EQ(a->port, 6400);
  EXPECT_EQ(store::ParseRedisSpec("redis://node1")->port, 6379);
  EXPECT_THROW(store::ParseRedisSpec("redis://:80"), ConfigError);
  EXPECT_THROW(store::ParseRedisSpec("redis://h:70000"), ConfigError);
}

TEST(Store, FilePutOverwritesTryGetNeverWaitsWaitIsBounded) {
  auto store = store::OpenStore(MakeFreshDir("store"), std::chrono::milliseconds(1500));
  auto view = store::PrefixedStore(store, "run1");
  EXPECT_FALSE(view->TryGet("k").has_value());
  view->Put("k", "one");
  view->Put("k", "two");  // Gloo's own set would refuse this
  EXPECT_EQ(view->TryGet("k"), "two");
  EXPECT_FALSE(store->TryGet("k").has_value());  // prefixes keep runs apart
  EXPECT_EQ(store->TryGet("run1/k"), "two");
  view->set("g", {'x', 'y'});
  EXPECT_EQ(view->get("g"), (std::vector<char>{'x', 'y'}));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ANY_THROW(view->get("never"));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(secs, 1.0);
  EXPECT_LE(secs, 2.5);
}

TEST(Store, BadSpecsAreConfigErrors) {
  EXPECT_THROW(store::OpenStore(""), ConfigError);
  EXPECT_THROW(store::OpenStore("http://x"), ConfigError);
  EXPECT_THROW(store::OpenStore("redis://127.0.0.1:1"), ConfigError);
  EXPECT_THROW(store::OpenStore("/proc/ddp-cannot-create-here"), ConfigError);
}

TEST(Spawn, OutcomesAreData) {
  const auto result = SpawnRanks(4, [](const RankEnv& env) {
    std::printf("hello from %d of %d via %s\n", env.rank, env.world_size, std::getenv("RANK"));
    std::fflush(stdout);
    if (env.rank == 1) return 7;
    if (env.rank == 2) std::abort();
    if (env.rank == 3) throw std::runtime_error("boom");
    return 0;
  });
  ASSERT_EQ(result.ranks.size(), 4u);
  EXPECT_FALSE(result.all_ok());
  EXPECT_TRUE(result.ranks[0].ok());
  EXPECT_EQ(result.ranks[0].stdout_text, "hello from 0 of 4 via 0\n");
  EXPECT_EQ(result.ranks[1].exit_code, 7);
  EXPECT_EQ(result.ranks[2].signal, SIGABRT);
  EXPECT_EQ(result.ranks[3].exit_code, 1);
  EXPECT_NE(result.ranks[3].stderr_text.find("rank 3: uncaught exception: boom"), std::string::npos);
  EXPECT_EQ(result.reason, StopReason::kAllExited);
}

TEST(Spawn, DeadlineKillsEveryRankAndExitCodeIs124) {
  SpawnOptions options;
  options.deadline = std::chrono::milliseconds(500);
  options.kill_grace = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  const auto result = SpawnRanks(
      3,
      [](const RankEnv& env) {
        if (env.rank == 0) return 0;
        ::signal(SIGTERM, SIG_IGN);  // must still die: SIGKILL after the grace
        while (true) ::pause();
      },
      options);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.timed_out());
  EXPECT_EQ(result.ExitCode(), 124);
  EXPECT_TRUE(result.ranks[0].ok());
  for (int r : {1, 2}) {
    EXPECT_TRUE(result.ranks[r].timed_out);
    EXPECT_EQ(result.ranks[r].signal, SIGKILL);
    EXPECT_EQ(::kill(result.ranks[r].pid, 0), -1);
  }
  EXPECT_LT(secs, 3.0);
}

TEST(Spawn, FailFastStopsThePeers) {
  SpawnOptions options;
  options.fail_fast = true;
  options.deadline = std::chrono::seconds(30);
  const auto result = SpawnRanks(
      2,
      [](const RankEnv& env) {
        if (env.rank == 0) return 4;
        while (true) ::pause();
      },
      options);
  EXPECT_EQ(result.reason, StopReason::kFailFast);
  EXPECT_EQ(result.first_failed_rank, 0);
  EXPECT_EQ(result.ExitCode(), 4);
  EXPECT_TRUE(result.ranks[1].killed);
  EXPECT_LT(result.elapsed.count(), 5000);
}

TEST(Spawn, WorldSizeMustBePositive) {
  EXPECT_THROW(SpawnRanks(0, [](const RankEnv&) { return 0; }), ConfigError);
}

}  // namespace
}  // namespace ddp::launch
