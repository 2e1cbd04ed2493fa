// RunWorld's guarantees about worlds that cannot give a result: a usage
// error on any rank is thrown (and remembered, so later worlds do not run);
// SIGTERM stops the running world at once and throws Interrupted; under a
// launcher, once the store stopped answering the remaining worlds fail at
// once instead of each waiting out a deadline; the failure names the rank
// that failed first.
#include "core/harness/world.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/cli/config_error.h"
#include "core/launch/interrupt.h"
#include "core/launch/spawn.h"
#include "core/launch/testing/redis_server.h"
#include "gtest/gtest.h"

namespace ddp::harness {
namespace {

using Clock = std::chrono::steady_clock;

WorldOptions Two() {
  WorldOptions o;
  o.world_size = 2;
  o.timeout_s = 2;
  return o;
}

// Each case in a child process: the state tested here is process-wide.
int InChild(const std::function<int()>& body, std::string* out) {
  auto c = launch::StartChild(0, body);
  launch::SuperviseOptions so;
  so.deadline = std::chrono::seconds(60);
  const auto r = launch::Supervise({c}, so);
  *out = r.ranks[0].stdout_text + r.ranks[0].stderr_text;
  return r.ranks[0].exited ? r.ranks[0].exit_code : 128 + r.ranks[0].signal;
}

TEST(RunWorld, AUsageErrorOnARankIsThrownAndStopsLaterWorlds) {
  std::string out;
  EXPECT_EQ(InChild([] {
              ::setenv("DDP_GLOO_ADDR", "nonexistent.invalid", 1);
              try {
                RunWorld(Two(), [](comm::Comm&) { return results::Json(); });
                return 1;
              } catch (const launch::ConfigError& e) {
                std::printf("first: %s\n", e.what());
              }
              const auto start = Clock::now();
              try {
                RunWorld(Two(), [](comm::Comm&) { return results::Json(); });
                return 2;
              } catch (const launch::ConfigError&) {
              }
              if (Clock::now() - start > std::chrono::milliseconds(100)) return 3;
              std::printf("remembered: %s\n", FirstUsageError().c_str());
              return 0;
            }, &out), 0) << out;
  EXPECT_NE(out.find("first: Gloo cannot bind to 'nonexistent.invalid' (DDP_GLOO_ADDR)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("remembered: Gloo cannot bind"), std::string::npos) << out;
}

TEST(RunWorld, TheFailureNamesTheRankThatFailedFirst) {
  const WorldResult w = RunWorld(Two(), [](comm::Comm& c) -> results::Json {
    if (c.rank() == 1) ::raise(SIGKILL);
    std::vector<double> v = {1.0};
    c.Allreduce(std::span(v));
    return results::Json();
  });
  EXPECT_FALSE(w.ok);
  EXPECT_EQ(w.failure.rfind("first failure: rank 1 (signal 9 (SIGKILL))", 0), 0u) << w.failure;
}

TEST(RunWorld, SigtermStopsTheWorldAndThrowsInterrupted) {
  std::string out;
  EXPECT_EQ(InChild([] {
              launch::InstallInterruptHandlers();
              std::thread([] {
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
                ::kill(::getpid(), SIGTERM);
              }).detach();
              const auto start = Clock::now();
              try {
                RunWorld(Two(), [](comm::Comm&) -> results::Json {
                  while (true) ::pause();
                });
              } catch (const Interrupted& i) {
                const double s = std::chrono::duration<double>(Clock::now() - start).count();
                std::printf("interrupted by %d after %.1f s\n", i.signal, s);
                return s < 3 ? 0 : 1;
              }
              return 2;
            }, &out), 0) << out;
  EXPECT_NE(out.find("interrupted by 15"), std::string::npos) << out;
}

TEST(RunWorld, UnderALauncherALostStoreSkipsTheRemainingWorlds) {
  std::string why;
  auto redis = launch::testing::RedisServer::Start(&why);
  if (!redis) GTEST_SKIP() << "skipped: " << why;
  std::string out;
  EXPECT_EQ(InChild([&] {
              // One rank of a one-rank run, as a launcher would start it.
              ::setenv("RANK", "0", 1);
              ::setenv("WORLD_SIZE", "1", 1);
              ::setenv("DDP_RDZV", redis->spec().c_str(), 1);
              ::setenv("DDP_GLOO_ADDR", "127.0.0.1", 1);
              WorldOptions o;
              o.world_size = 1;
              o.timeout_s = 1;
              // The store dies while the world runs; the world fails.
              const WorldResult first = RunWorld(o, [&](comm::Comm&) -> results::Json {
                redis->Kill();
                throw std::runtime_error("the body failed");
              });
              if (first.ok) return 1;
              const auto start = Clock::now();
              const WorldResult second = RunWorld(o, [](comm::Comm&) { return results::Json(); });
              const double s = std::chrono::duration<double>(Clock::now() - start).count();
              std::printf("second: %s (%.2f s)\n", second.failure.c_str(), s);
              return !second.ok && s < 0.1 ? 0 : 2;
            }, &out), 0) << out;
  EXPECT_NE(out.find("second: not run: the rendezvous store failed earlier: cannot reach Redis "
                     "rendezvous " + redis->spec()),
            std::string::npos)
      << out;
}

// The world's bound covers NCCL's start-up bound (at least 60 s), so a world
// with the hang repro's 1.5 s deadline is not killed while several CUDA
// contexts start on one GPU; Gloo's start-up bound is its deadline, so a
// Gloo world keeps 4 x deadline + 10 s.
TEST(WorldDeadline, CoversTheStartUpBound) {
  ::unsetenv("DDP_PITFALLS_STARTUP_TIMEOUT");
  WorldOptions o;
  o.timeout_s = 1.5;
  o.backend = "gloo";
  EXPECT_DOUBLE_EQ(WorldDeadlineS(o), 16.0);
  o.backend = "nccl";
  EXPECT_DOUBLE_EQ(WorldDeadlineS(o), 16.0 + 60.0 - 1.5);
  o.world_deadline_s = 5;
  EXPECT_DOUBLE_EQ(WorldDeadlineS(o), 5.0);
}

}  // namespace
}  // namespace ddp::harness
