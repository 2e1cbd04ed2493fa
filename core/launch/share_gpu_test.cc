// Shared-GPU mode (share_gpu.h): who decides, and what the ranks get. With
// the visible GPU count injected (no GPU needed), the spawned ranks carry
// distinct NCCL_HOSTIDs exactly when they share.
#include "core/launch/share_gpu.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "core/cli/config_error.h"
#include "core/launch/spawn.h"
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

TEST(DecideShareGpu, AutomaticOnlyForNcclWithFewerGpusThanRanks) {
  const auto none = FakeEnv({});
  EXPECT_TRUE(DecideShareGpu("nccl", false, 4, 1, none).share);
  EXPECT_TRUE(DecideShareGpu("nccl", false, 4, 3, none).share);
  EXPECT_FALSE(DecideShareGpu("nccl", false, 4, 4, none).share);
  EXPECT_FALSE(DecideShareGpu("nccl", false, 4, 8, none).share);
  EXPECT_FALSE(DecideShareGpu("nccl", false, 4, 0, none).share);   // no GPU: nothing to share
  EXPECT_FALSE(DecideShareGpu("nccl", false, 4, -1, none).share);  // unknown
  EXPECT_FALSE(DecideShareGpu("gloo", false, 4, 1, none).share);
  EXPECT_FALSE(DecideShareGpu("", false, 4, 1, none).share);
  EXPECT_EQ(DecideShareGpu("nccl", false, 4, 1, none).why,
            "4 NCCL ranks on this host, 1 GPU visible (DDP_SHARE_GPU=0 turns this off)");
}

TEST(DecideShareGpu, FlagAndEnvironment) {
  EXPECT_TRUE(DecideShareGpu("nccl", true, 2, 8, FakeEnv({})).share);
  EXPECT_TRUE(DecideShareGpu("nccl", false, 2, 8, FakeEnv({{"DDP_SHARE_GPU", "1"}})).share);
  EXPECT_FALSE(DecideShareGpu("nccl", false, 4, 1, FakeEnv({{"DDP_SHARE_GPU", "0"}})).share);
  EXPECT_TRUE(DecideShareGpu("nccl", true, 4, 1, FakeEnv({{"DDP_SHARE_GPU", "0"}})).share);
  try {
    DecideShareGpu("nccl", false, 4, 1, FakeEnv({{"DDP_SHARE_GPU", "yes"}}));
    FAIL() << "DDP_SHARE_GPU=yes accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "DDP_SHARE_GPU='yes' must be 0 or 1");
  }
}

// Each rank prints its NCCL_HOSTID (or "-"); the set of what they printed.
std::vector<std::string> HostIds(int world_size, const SpawnOptions& so) {
  const RunResult r = SpawnRanks(
      world_size,
      [](const RankEnv&) {
        const char* id = std::getenv("NCCL_HOSTID");
        std::printf("%s", id == nullptr ? "-" : id);
        return 0;
      },
      so);
  EXPECT_TRUE(r.all_ok()) << r.Summary();
  std::vector<std::string> ids;
  for (const auto& rank : r.ranks) ids.push_back(rank.stdout_text);
  return ids;
}

class SpawnShareGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("NCCL_HOSTID");
    ::unsetenv("DDP_SHARE_GPU");
  }
  void TearDown() override { ::unsetenv("DDP_SHARE_GPU"); }
};

TEST_F(SpawnShareGpu, OneGpuFourNcclRanksGetDistinctHostIds) {
  SpawnOptions so;
  so.backend = "nccl";
  so.visible_gpus = 1;
  const auto ids = HostIds(4, so);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 4u);
  for (const auto& id : ids) EXPECT_NE(id, "-");
}

TEST_F(SpawnShareGpu, EnoughGpusOrGlooOrDisabledLeaveNcclHostIdUnset) {
  SpawnOptions so;
  so.backend = "nccl";
  so.visible_gpus = 4;
  EXPECT_EQ(HostIds(4, so), std::vector<std::string>(4, "-"));
  so.backend = "gloo";
  so.visible_gpus = 1;
  EXPECT_EQ(HostIds(4, so), std::vector<std::string>(4, "-"));
  so.backend = "nccl";
  ::setenv("DDP_SHARE_GPU", "0", 1);
  EXPECT_EQ(HostIds(4, so), std::vector<std::string>(4, "-"));
}

TEST_F(SpawnShareGpu, EnvironmentAndOptionShareInSpawnedMode) {
  SpawnOptions so;
  so.backend = "nccl";
  so.visible_gpus = 2;
  ::setenv("DDP_SHARE_GPU", "1", 1);
  auto ids = HostIds(2, so);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 2u);
  ::unsetenv("DDP_SHARE_GPU");
  so.share_gpu = true;
  ids = HostIds(2, so);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 2u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "-"), 0);
}

TEST_F(SpawnShareGpu, BadEnvironmentValueIsAUsageError) {
  ::setenv("DDP_SHARE_GPU", "true", 1);
  SpawnOptions so;
  so.backend = "nccl";
  so.visible_gpus = 1;
  EXPECT_THROW(SpawnRanks(2, [](const RankEnv&) { return 0; }, so), ConfigError);
}

// Asked in a child process: answers (0 here, without a driver), and the
// same twice.
TEST(VisibleGpuCount, AnswersWithoutAGpu) {
  const int n = VisibleGpuCount();
  EXPECT_GE(n, 0);
  EXPECT_EQ(VisibleGpuCount(), n);
  std::printf("visible GPUs: %d\n", n);
}

}  // namespace
}  // namespace ddp::launch
