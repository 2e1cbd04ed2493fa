// Stores under faults: every operation ends within the store's timeout with
// a StoreError naming the store — a stopped Redis (SIGSTOP: connections are
// still accepted, nothing answers), a killed Redis, a removed directory —
// and the launcher-side operations (SetIfAbsent, DeletePrefix) work on both.
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "core/cli/config_error.h"
#include "core/launch/spawn.h"
#include "core/launch/testing/redis_server.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace ddp::store {
namespace {

using launch::ConfigError;
using launch::MakeFreshDir;

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The message of the StoreError `f` throws, and how long it took.
template <typename F>
std::pair<std::string, double> FailureOf(F&& f) {
  const auto start = Clock::now();
  try {
    f();
  } catch (const StoreError& e) {
    return {e.what(), SecondsSince(start)};
  }
  return {"(no StoreError)", SecondsSince(start)};
}

void LauncherOperations(Store& store) {
  EXPECT_TRUE(store.SetIfAbsent("run7/ddprun", "me"));
  EXPECT_FALSE(store.SetIfAbsent("run7/ddprun", "you"));
  EXPECT_EQ(store.TryGet("run7/ddprun"), "me");
  store.Put("run7/comm0/gloo/rank_0", "a");
  store.Put("run7/comm0/progress/0", "b");
  store.Put("run70/other", "c");  // a different run whose id starts the same
  EXPECT_EQ(store.DeletePrefix("run7/"), 3);
  EXPECT_FALSE(store.TryGet("run7/comm0/progress/0").has_value());
  EXPECT_EQ(store.TryGet("run70/other"), "c");
  // Gloo's set refuses an existing key, naming the likely cause.
  store.set("once", {'x'});
  const auto [msg, secs] = FailureOf([&] { store.set("once", {'y'}); });
  EXPECT_NE(msg.find("key 'once' is already set"), std::string::npos) << msg;
  EXPECT_NE(msg.find("DDP_RUN_ID"), std::string::npos) << msg;
}

TEST(FileStore, LauncherOperations) {
  auto store = OpenStore(MakeFreshDir("store"), milliseconds(1000));
  LauncherOperations(*store);
}

TEST(FileStore, WaitIsBoundedToTheMillisecondAndARemovedFolderFailsAtOnce) {
  const std::string dir = MakeFreshDir("store");
  auto store = OpenStore(dir, milliseconds(700));
  const auto [msg, secs] = FailureOf([&] { store->get("never"); });
  EXPECT_NE(msg.find("timed out after 700 ms waiting for key 'never'"), std::string::npos) << msg;
  EXPECT_GE(secs, 0.69);
  EXPECT_LT(secs, 1.5);
  std::filesystem::remove_all(dir);
  const auto [gone, gone_secs] = FailureOf([&] { store->wait({"k"}, milliseconds(5000)); });
  EXPECT_NE(gone.find("is gone"), std::string::npos) << gone;
  EXPECT_LT(gone_secs, 1.0);
  EXPECT_NE(FailureOf([&] { store->Put("k", "v"); }).first.find("file:" + dir), std::string::npos);
}

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    server_ = launch::testing::RedisServer::Start(&why);
    if (!server_) GTEST_SKIP() << "skipped: " << why;
  }
  std::unique_ptr<launch::testing::RedisServer> server_;
};

TEST_F(RedisStoreTest, LauncherOperations) {
  auto store = OpenStore(server_->spec(), milliseconds(2000));
  LauncherOperations(*store);
  const auto [msg, secs] = FailureOf([&] { store->wait({"never"}, milliseconds(300)); });
  EXPECT_NE(msg.find("timed out after 300 ms waiting for key(s) [never]"), std::string::npos) << msg;
  EXPECT_LT(secs, 1.0);
}

TEST_F(RedisStoreTest, AStoppedServerIsAnErrorWithinTheTimeoutNotAHang) {
  // Stopped before anyone connects: the open's PING gets no reply.
  server_->Pause();
  auto start = Clock::now();
  try {
    OpenStore(server_->spec(), milliseconds(1000));
    ADD_FAILURE() << "opened a stopped server";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach Redis rendezvous " + server_->spec() +
                                         ": no reply to PING within 1.0 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(SecondsSince(start), 2.0);
  // Stopped while in use: the next operation fails within the timeout, and
  // every later one at once.
  server_->Resume();
  auto store = OpenStore(server_->spec(), milliseconds(1000));
  store->Put("k", "v");
  server_->Pause();
  const auto [msg, secs] = FailureOf([&] { store->Put("k", "w"); });
  EXPECT_NE(msg.find("Redis rendezvous " + server_->spec() + " unreachable: no reply to SET within 1.0 s"),
            std::string::npos)
      << msg;
  EXPECT_GE(secs, 0.9);
  EXPECT_LT(secs, 2.0);
  const auto [later, later_secs] = FailureOf([&] { store->TryGet("k"); });
  EXPECT_NE(later.find("unreachable"), std::string::npos) << later;
  EXPECT_LT(later_secs, 0.5);
  // So does a new connection while the server is still silent: it gets a
  // short PING, not a second full timeout, and names what happened before.
  start = Clock::now();
  try {
    OpenStore(server_->spec(), milliseconds(1000));
    ADD_FAILURE() << "opened a stopped server";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no reply to PING within 0.3 s"), std::string::npos) << what;
    EXPECT_NE(what.find("; just before: no reply to SET within 1.0 s"), std::string::npos) << what;
  }
  EXPECT_LT(SecondsSince(start), 0.8);
  // A wait longer than the operation timeout is still bounded by its own.
  server_->Resume();
  auto waiter = OpenStore(server_->spec(), milliseconds(1000));
  server_->Pause();
  const auto [wait_msg, wait_secs] = FailureOf([&] { waiter->wait({"never"}, milliseconds(600)); });
  EXPECT_NE(wait_msg.find("unreachable"), std::string::npos) << wait_msg;
  EXPECT_LT(wait_secs, 2.0);
  server_->Resume();
}

TEST_F(RedisStoreTest, AKilledServerIsAnErrorAtOnce) {
  auto store = OpenStore(server_->spec(), milliseconds(5000));
  store->Put("k", "v");
  server_->Kill();
  const auto [msg, secs] = FailureOf([&] { store->TryGet("k"); });
  EXPECT_NE(msg.find("Redis rendezvous " + server_->spec() + " unreachable: GET failed"),
            std::string::npos)
      << msg;
  EXPECT_LT(secs, 1.0);
  const auto start = Clock::now();
  EXPECT_THROW(OpenStore(server_->spec(), milliseconds(5000)), ConfigError);
  EXPECT_LT(SecondsSince(start), 1.0);
}

// Issue 35: a server that demands a password answered PING with NOAUTH, the
// store opened, and the first SET failed (exit 1 where "connection refused"
// is 2). Now opening it is a ConfigError (exit 2) that says why.
TEST(RedisStore, AServerThatDemandsAPasswordIsAConfigError) {
  std::string why;
  launch::testing::RedisPlacement where;
  where.extra_args = {"--requirepass", "secret"};
  const auto server = launch::testing::RedisServer::Start(&why, where);
  if (!server) GTEST_SKIP() << "skipped: " << why;
  try {
    OpenStore(server->spec(), milliseconds(2000));
    ADD_FAILURE() << "opened a store that refuses every command";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach Redis rendezvous " + server->spec() +
                                         ": refused PING: NOAUTH"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("demands a password"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddp::store
