// Real pair binaries (fixes/mean_of_means, fixes/drop_last_hang) started the way cluster launchers
// start ranks: N separate processes whose only instructions are the
// variables srun or torchrun export (no flags), meeting in a directory store
// named by DDP_RDZV. The ranks must find their rank and world from the
// environment alone and the fix must hold at that world size.
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/launch/spawn.h"
#include "core/launch/testing/run_command.h"
#include "gtest/gtest.h"

namespace ddp::launch {
namespace {

using testing::Command;
using testing::CommandResult;
using testing::Runfile;
using Env = std::vector<std::pair<std::string, std::string>>;

const std::string kPair = "fixes/mean_of_means/mean_of_means";

// Starts one process per entry of `envs` at once and waits for all.
std::vector<CommandResult> RunRanks(const std::vector<Env>& envs,
                                    const std::vector<std::string>& argv = {Runfile(kPair), "--seeds",
                                                                            "1"}) {
  std::vector<CommandResult> results(envs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < envs.size(); ++i) {
    threads.emplace_back([&, i] {
      Command cmd(argv, envs[i]);
      cmd.deadline = std::chrono::seconds(60);
      results[i] = testing::RunCommand(cmd);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// How many fix rows of a closing table (core/results/table.h: kind, variant,
// W, verdict, then the measured columns) have each verdict.
std::map<std::string, int> FixVerdicts(const std::string& table) {
  std::map<std::string, int> verdicts;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string kind, variant, w_text, verdict;
    if (row >> kind >> variant >> w_text >> verdict && kind == "fix") ++verdicts[verdict];
  }
  return verdicts;
}

// Rank 0 prints the table with every configuration exact at W; the others
// print nothing of it; everyone exits 0.
void ExpectFixHolds(const std::vector<CommandResult>& ranks, int w) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    const auto& o = ranks[r].outcome;
    EXPECT_TRUE(o.ok()) << "rank " << r << ": " << o.Describe() << "\n"
                        << o.stdout_text << o.stderr_text;
  }
  const std::string& table = ranks[0].outcome.stdout_text;
  const std::string& header = ranks[0].outcome.stderr_text;
  EXPECT_NE(header.find("mean_of_means fix: W=" + std::to_string(w)), std::string::npos) << header;
  EXPECT_EQ(FixVerdicts(table)["exact"], 12) << table;
  EXPECT_EQ(table.find("inexact"), std::string::npos) << table;
}

TEST(Launchers, SrunEnvironmentOnly) {
  // srun -N 2 -n 3 (2 tasks on node 0, 1 on node 1), job 77, step 0.
  const std::string dir = MakeFreshDir("srun");
  const int local[] = {0, 1, 0}, node[] = {0, 0, 1};
  std::vector<Env> envs;
  for (int r = 0; r < 3; ++r) {
    envs.push_back({{"SLURM_PROCID", std::to_string(r)}, {"SLURM_NTASKS", "3"},
                    {"SLURM_LOCALID", std::to_string(local[r])},
                    {"SLURM_NODEID", std::to_string(node[r])}, {"SLURM_STEP_ID", "0"},
                    {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
                    {"SLURM_TASKS_PER_NODE", "2,1"}, {"DDP_RDZV", dir}});
  }
  ExpectFixHolds(RunRanks(envs), 3);
}

TEST(Launchers, TorchrunEnvironmentOnly) {
  // torchrun --nnodes 2 --nproc-per-node 1 --rdzv-id job5, plus DDP_RDZV.
  const std::string dir = MakeFreshDir("torchrun");
  std::vector<Env> envs;
  for (int r = 0; r < 2; ++r) {
    envs.push_back({{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                    {"LOCAL_WORLD_SIZE", "1"}, {"GROUP_RANK", std::to_string(r)},
                    {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
                    {"TORCHELASTIC_RUN_ID", "job5"}, {"DDP_RDZV", dir}});
  }
  ExpectFixHolds(RunRanks(envs), 2);
}

std::vector<Env> TorchrunEnvs(int w, const std::string& dir) {
  std::vector<Env> envs;
  for (int r = 0; r < w; ++r) {
    envs.push_back({{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(w)},
                    {"LOCAL_RANK", std::to_string(r)}, {"LOCAL_WORLD_SIZE", std::to_string(w)},
                    {"GROUP_RANK", "0"}, {"DDP_RDZV", dir}});
  }
  return envs;
}

// A fix whose verdict reads every rank's values (drop_last_hang: each rank's
// per-step check, rank 0's reference): under a launcher each rank gets them
// all from the world (it used to read a field only rank 0 returns and died
// of SIGSEGV on rank 1). Every rank judges the same: 6 rows exact, the 3
// rows of PyTorch's default Join inexact as expected; every rank exits 0.
TEST(Launchers, EveryRankJudgesFromEveryRanksValues) {
  const auto ranks = RunRanks(TorchrunEnvs(2, MakeFreshDir("judge")),
                              {Runfile("fixes/drop_last_hang/drop_last_hang")});
  for (size_t r = 0; r < ranks.size(); ++r) {
    const auto& o = ranks[r].outcome;
    EXPECT_TRUE(o.ok()) << "rank " << r << ": " << o.Describe() << "\n" << o.stderr_text;
  }
  auto verdicts = FixVerdicts(ranks[0].outcome.stdout_text);
  EXPECT_EQ(verdicts["exact"], 6) << ranks[0].outcome.stdout_text;
  EXPECT_EQ(verdicts["inexact"], 3) << ranks[0].outcome.stdout_text;
}

// A repro that aborts ranks on purpose refuses a launcher, naming why.
TEST(Launchers, ReprosThatAbortRanksRefuseALauncher) {
  for (const std::string pair : {"repro/wrong_all_gather/wrong_all_gather",
                                 "repro/drop_last_hang/drop_last_hang"}) {
    const auto r = testing::RunCommand(Command({Runfile(pair)}, TorchrunEnvs(2, MakeFreshDir("refuse"))[0]))
                       .outcome;
    EXPECT_TRUE(r.exited && r.exit_code == 2) << pair << ": " << r.Describe() << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("run it without a launcher"), std::string::npos) << r.stderr_text;
  }
}

TEST(Launchers, TorchrunWithoutDdpRdzvIsAUsageError) {
  Env env = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.1.2.3"},
             {"MASTER_PORT", "29500"}};
  const auto r = testing::RunCommand(Command({Runfile(kPair)}, env)).outcome;
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("DDP_RDZV is not set: MASTER_ADDR:MASTER_PORT (10.1.2.3:29500) is "
                               "torchrun's own c10d TCPStore"),
            std::string::npos)
      << r.stderr_text;
}

}  // namespace
}  // namespace ddp::launch
