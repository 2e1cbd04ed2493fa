// The multi-host test harness itself (core/launch/testing/netns.h): three
// test hosts made of network namespaces really are three hosts to the ranks
// (ddprun --nnodes on each, Gloo bound to each host's address, rendezvous in
// a redis-server on host 0); everything the lab made goes away with it, also
// when a test fails half-way; a killed test run's namespaces are swept; the
// delay wire delays and the loss rule drops. Skips, with the reason, where
// namespaces cannot be made (not root).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/cli/config_error.h"
#include "core/launch/spawn.h"
#include "core/launch/testing/netns.h"
#include "core/launch/testing/processes.h"
#include "core/launch/testing/run_command.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace ddp::launch::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kDdprun = "tools/ddprun/ddprun";
const std::string kExample = "core/comm/examples/allreduce_example";

std::unique_ptr<NetnsLab> MakeLab(const LabOptions& options, std::string* why) {
  auto lab = NetnsLab::Create(options, why);
  if (!lab) std::printf("SKIPPED (netns): %s\n", why->c_str());
  return lab;
}

bool NamespaceExists(const std::string& name) {
  return std::filesystem::exists("/run/netns/" + name);
}

TEST(Netns, ThreeHostsRunOneWorldThroughRedis) {
  std::string why;
  auto lab = MakeLab({.hosts = 3}, &why);
  if (!lab) GTEST_SKIP() << why;
  auto redis = lab->StartRedis(0, &why);
  ASSERT_TRUE(redis) << why;
  EXPECT_EQ(redis->spec(), "redis://10.77.0.1:6379");
  const auto runs = RunOnEveryHost(*lab, [&](int k) {
    Command cmd({Runfile(kDdprun), "--nnodes", "3", "--node_rank", std::to_string(k), "--nproc",
                 "2", "--rdzv", redis->spec(), "--collective-timeout", "10", "--timeout", "60",
                 "--", Runfile(kExample)});
    cmd.deadline = seconds(60);
    return cmd;
  });
  for (int k = 0; k < 3; ++k) {
    const auto& o = runs[static_cast<size_t>(k)].outcome;
    ASSERT_TRUE(o.ok()) << "host " << k << ": " << o.Describe() << o.stderr_text;
    for (int local = 0; local < 2; ++local) {
      const int r = 2 * k + local;
      EXPECT_NE(o.stdout_text.find("[rank " + std::to_string(r) + "] rank " + std::to_string(r) +
                                   "/6 on gloo: allreduce(sum of rank+1) = 21 (expected 21), "
                                   "allgather(rank) = [0, 1, 2, 3, 4, 5]"),
                std::string::npos)
          << o.stdout_text;
    }
  }
  // The last host out deleted the run's keys.
  lab->InHost(2, [&] {
    auto store = store::OpenStore(redis->spec(), seconds(5));
    EXPECT_EQ(store->DeletePrefix("ddprun/"), 0);
  });
}

// SpawnRanks with DDP_SPAWN_HOSTS: rank r runs in host r mod H's network
// namespace (the same /proc/self/ns/net as the host's) with its address.
TEST(Netns, SpawnedRanksEnterTheirHosts) {
  std::string why;
  auto lab = MakeLab({.hosts = 2}, &why);
  if (!lab) GTEST_SKIP() << why;
  auto inode = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_ino) : -1L;
  };
  const std::string placement =
      lab->ns(0) + "=" + lab->address(0) + "," + lab->ns(1) + "=" + lab->address(1);
  ::setenv("DDP_SPAWN_HOSTS", placement.c_str(), 1);
  const auto result = SpawnRanks(3, [&](const RankEnv& env) {
    const std::string host = lab->ns(env.rank % 2);
    const char* addr = std::getenv("DDP_GLOO_ADDR");
    const bool ok = inode("/proc/self/ns/net") == inode("/run/netns/" + host) &&
                    addr != nullptr && std::string(addr) == lab->address(env.rank % 2);
    return ok ? 0 : 1;
  });
  ::setenv("DDP_SPAWN_HOSTS", (placement + ",bad").c_str(), 1);
  EXPECT_THROW(SpawnRanks(1, [](const RankEnv&) { return 0; }), ConfigError);
  ::unsetenv("DDP_SPAWN_HOSTS");
  EXPECT_TRUE(result.all_ok()) << result.Summary();
}

TEST(Netns, HostsAreSeparate) {
  std::string why;
  auto lab = MakeLab({.hosts = 2}, &why);
  if (!lab) GTEST_SKIP() << why;
  auto redis = lab->StartRedis(0, &why);
  ASSERT_TRUE(redis) << why;
  // Host 1 reaches host 0's address; this process (the machine's own
  // namespace) does not, and host 1 cannot bind host 0's address.
  lab->InHost(1, [&] { store::OpenStore(redis->spec(), seconds(2)); });
  EXPECT_THROW(store::OpenStore(redis->spec(), milliseconds(300)), std::exception);
  const auto r = RunCommand(Command(lab->Exec(1, {Runfile(kExample)}),
                                    {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DDP_RDZV", redis->spec()},
                                     {"DDP_GLOO_ADDR", lab->address(0)}}))
                     .outcome;
  EXPECT_EQ(r.exit_code, 2) << r.Describe() << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("Gloo cannot bind to '10.77.0.1'"), std::string::npos)
      << r.stderr_text;
}

TEST(Netns, EverythingGoesAwayAlsoWhenATestFails) {
  std::string why;
  std::vector<std::string> names;
  std::vector<pid_t> inside;
  ChildProcess sleeper;
  try {
    auto lab = MakeLab({.hosts = 2}, &why);
    if (!lab) GTEST_SKIP() << why;
    for (int k = 0; k < 2; ++k) names.push_back(lab->ns(k));
    names.push_back(lab->prefix() + "br");
    // A process inside host 1 that nobody supervises.
    const auto argv = lab->Exec(1, {"/bin/sleep", "1000"});
    sleeper = StartChild(0, [argv] {
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      return 127;
    });
    for (int i = 0; i < 200 && inside.empty(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
      inside = lab->Pids(1);
    }
    ASSERT_EQ(inside, std::vector<pid_t>{sleeper.pid});
    throw std::runtime_error("a failing test");
  } catch (const std::runtime_error&) {
  }
  ASSERT_EQ(names.size(), 3u);
  for (const auto& n : names) EXPECT_FALSE(NamespaceExists(n)) << n << " left behind";
  // Killed by the lab (SIGKILL), not by this reaping.
  SuperviseOptions reap;
  reap.deadline = seconds(2);
  const auto r = Supervise({sleeper}, reap).ranks[0];
  EXPECT_EQ(r.signal, SIGKILL) << r.Describe();
  EXPECT_FALSE(r.timed_out) << "a process in a namespace survived the lab";
}

TEST(Netns, SweepRemovesWhatAKilledTestLeft) {
  std::string why;
  auto probe = MakeLab({.hosts = 1}, &why);
  if (!probe) GTEST_SKIP() << why;
  probe.reset();
  // A pid that is certainly gone: a child that exited and was reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = "ddpt-" + std::to_string(dead) + "-0-h0";
  MustRun({"/usr/sbin/ip", "netns", "add", stale});
  MustRun({"/usr/sbin/ip", "-n", stale, "link", "add", "eth0", "type", "veth", "peer", "name", "x"});
  ASSERT_TRUE(NamespaceExists(stale));
  EXPECT_GE(NetnsLab::SweepStale(), 1);
  EXPECT_FALSE(NamespaceExists(stale));
}

TEST(Netns, DelayWireAddsItsDelayEachWay) {
  std::string why;
  auto lab = MakeLab({.hosts = 2, .wiring = Wiring::kDelayWire, .delay = milliseconds(100)}, &why);
  if (!lab) GTEST_SKIP() << why;
  auto redis = lab->StartRedis(0, &why);
  ASSERT_TRUE(redis) << why;
  lab->InHost(1, [&] {
    auto store = store::OpenStore(redis->spec(), seconds(5));
    // One request and its reply: two crossings of the wire.
    const auto start = std::chrono::steady_clock::now();
    store->TryGet("k");
    const double rtt = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(rtt, 0.2);
    EXPECT_LT(rtt, 0.4);
  });
}

TEST(Netns, LossRuleDrops) {
  std::string why;
  if (!NetnsLab::CanAddLoss(&why)) GTEST_SKIP() << why;
  auto lab = MakeLab({.hosts = 2}, &why);
  if (!lab) GTEST_SKIP() << why;
  auto redis = lab->StartRedis(0, &why);
  ASSERT_TRUE(redis) << why;
  lab->AddLoss(1, 100);  // everything arriving at host 1 is lost
  lab->InHost(1, [&] {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(store::OpenStore(redis->spec(), milliseconds(500)), std::exception);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.5);
  });
}

}  // namespace
}  // namespace ddp::launch::testing
