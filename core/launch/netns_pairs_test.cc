// The pairs across hosts: each binary runs twice — on this host as usual,
// and with its spawned ranks spread over test hosts (network namespaces:
// own network stack, own address, traffic over veth and a bridge; Gloo bound
// to the host's address; rendezvous, and the flight recorder's dump
// exchange, through a redis-server on host 0; DDP_SPAWN_HOSTS /
// DDP_SPAWN_RDZV, core/launch/spawn_hosts.h) — and every record must carry
// the same verdict in both runs, the exit status too. The repros' rows that
// abort or hang a rank on purpose run across hosts as well: the binary keeps
// its own supervisor. Skips, with the reason, where namespaces cannot be made.
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/launch/spawn.h"
#include "core/launch/spawn_hosts.h"
#include "core/launch/testing/netns.h"
#include "core/launch/testing/run_command.h"
#include "core/results/json.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace ddp::launch::testing {
namespace {

using std::chrono::seconds;

struct Verdicts {
  int exit_code = -1;
  std::map<std::string, std::string> by_row;  // variant + config -> verdict
  std::string log;
};

Verdicts ReadVerdicts(const CommandResult& run, const std::string& json) {
  Verdicts v;
  v.exit_code = run.outcome.exited ? run.outcome.exit_code : 128 + run.outcome.signal;
  v.log = run.outcome.stdout_text + run.outcome.stderr_text;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return v;
  const results::Json records = results::ParseJson(text.str());
  for (const auto& record : records) {
    const std::string key =
        record.at("variant").get<std::string>() + " " + Dump(record.at("config"));
    v.by_row[key] = record.at("verdict").get<std::string>();
  }
  return v;
}

// Runs `binary args` here, then across `hosts` test hosts, and compares.
void ExpectSameVerdicts(const std::string& binary, std::vector<std::string> args, int hosts,
                        int expected_rows) {
  const std::string dir = MakeFreshDir("pairs");
  std::vector<std::string> argv = {Runfile(binary)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto with_json = [&](const std::string& name) {
    std::vector<std::string> a = argv;
    a.insert(a.end(), {"--json", dir + "/" + name + ".json"});
    return a;
  };
  std::string why;
  auto lab = NetnsLab::Create({.hosts = hosts}, &why);
  if (!lab) {
    std::printf("SKIPPED (netns): %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  Command here(with_json("here"));
  here.deadline = seconds(120);
  const Verdicts one = ReadVerdicts(RunCommand(here), dir + "/here.json");
  auto redis = lab->StartRedis(0, &why);
  ASSERT_TRUE(redis) << why;
  std::string placement;
  for (int k = 0; k < hosts; ++k) {
    placement += (k == 0 ? "" : ",") + lab->ns(k) + "=" + lab->address(k);
  }
  // The binary itself (its supervisor) lives on host 0, next to the store.
  Command across(lab->Exec(0, with_json("across")),
                 {{kEnvSpawnHosts, placement}, {kEnvSpawnRdzv, redis->spec()}});
  across.deadline = seconds(120);
  const Verdicts many = ReadVerdicts(RunCommand(across), dir + "/across.json");

  EXPECT_EQ(one.exit_code, 0) << one.log;
  EXPECT_EQ(many.exit_code, one.exit_code) << many.log;
  EXPECT_EQ(static_cast<int>(one.by_row.size()), expected_rows) << one.log;
  EXPECT_EQ(many.by_row, one.by_row) << many.log;
  // Every world deleted its keys from the shared store.
  lab->InHost(0, [&] {
    EXPECT_EQ(store::OpenStore(redis->spec(), seconds(5))->DeletePrefix(""), 0);
  });
}

TEST(PairsAcrossHosts, WrongAllGatherRepro) {
  ExpectSameVerdicts("repro/wrong_all_gather/wrong_all_gather",
                     {"--world_size", "4", "--seeds", "1"}, 3, 16);
}

TEST(PairsAcrossHosts, WrongAllGatherFix) {
  // 8 configurations x 3 methods (pad_gather_trim, allgatherv, known_counts).
  ExpectSameVerdicts("fixes/wrong_all_gather/wrong_all_gather",
                     {"--world_size", "4", "--seeds", "1"}, 3, 24);
}

TEST(PairsAcrossHosts, DropLastHangRepro) {
  ExpectSameVerdicts("repro/drop_last_hang/drop_last_hang",
                     {"--world_size", "2", "--seeds", "1", "--hang_world_deadline", "3"}, 2, 7);
}

TEST(PairsAcrossHosts, DropLastHangFix) {
  ExpectSameVerdicts("fixes/drop_last_hang/drop_last_hang", {"--world_size", "2", "--seeds", "1"},
                     2, 9);
}

TEST(PairsAcrossHosts, SmallBatchBnSyncBnFix) {
  ExpectSameVerdicts("fixes/small_batch_bn/small_batch_bn",
                     {"--world_size", "2", "--seeds", "1", "--steps", "5", "--n", "64"}, 2, 6);
}

}  // namespace
}  // namespace ddp::launch::testing
