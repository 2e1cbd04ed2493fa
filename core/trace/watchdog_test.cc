// The watchdog in one process: a collective stuck past its deadline (the
// main thread never comes back from the engine) is dumped and its abort hook
// runs; SIGUSR1 writes a dump; a request through the store is answered with
// a published dump. (Whole worlds of real ranks: core/comm's trace_test.)
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/launch/spawn.h"
#include "core/store/store.h"
#include "core/trace/dump_json.h"
#include "core/trace/watchdog.h"
#include "gtest/gtest.h"

namespace ddp::trace {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::shared_ptr<FlightRecorder> Recorder(int rank, int world, std::chrono::milliseconds deadline) {
  return std::make_shared<FlightRecorder>(
      FlightRecorder::Identity{"comm0", "gloo", rank, world, deadline, false}, 16);
}

comm::Fingerprint Allreduce(int64_t seq) {
  comm::Fingerprint f;
  f.seq = seq;
  f.op = comm::OpKind::kAllreduce;
  f.dtype = comm::DType::kFloat64;
  f.count = 3;
  f.reduce = 0;
  return f;
}

bool WaitFor(const std::function<bool()>& ok, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!ok()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

TEST(Watchdog, StuckMainThreadIsDumpedAndAbortedPastTheDeadline) {
  const std::string dir = launch::MakeFreshDir("wd-stuck");
  auto rec = Recorder(0, 1, 200ms);
  auto& wd = Watchdog::Get();
  const int id = wd.Register({rec, nullptr, dir, "run"});
  std::atomic<bool> aborted{false};
  wd.SetAbortHook(id, [&] { aborted = true; });
  const auto start = Clock::now();
  const int line = __LINE__ + 1;
  rec->Enter(Allreduce(0), {}, std::source_location::current(), start);  // and never Exit
  ASSERT_TRUE(WaitFor([&] { return aborted.load(); }, 10s));
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 1.2);  // deadline 0.2 s + the 1 s grace
  const RankDump d = ReadDumpFile(DumpPath(dir, 0));
  EXPECT_EQ(d.reason, "deadline (main thread stuck in the engine)");
  ASSERT_EQ(d.comms.at(0).entries.size(), 1u);
  EXPECT_EQ(d.comms[0].entries[0].state, State::kEntered);
  EXPECT_EQ(d.comms[0].entries[0].site.line, line);
  wd.Unregister(id);
}

// A communicator whose engine connects inside its first collective (NCCL)
// gives that collective the start-up bound (Identity::first_deadline): the
// watchdog waits for it there, and for the deadline from the second on.
TEST(Watchdog, FirstCollectiveIsStuckOnlyPastTheStartUpBound) {
  const std::string dir = launch::MakeFreshDir("wd-first");
  auto rec = std::make_shared<FlightRecorder>(
      FlightRecorder::Identity{"comm0", "nccl", 0, 1, 200ms, false, 3000ms}, 16);
  auto& wd = Watchdog::Get();
  const int id = wd.Register({rec, nullptr, dir, "run"});
  std::atomic<int> aborts{0};
  wd.SetAbortHook(id, [&] { ++aborts; });
  rec->Enter(Allreduce(0), {}, std::source_location::current(), Clock::now());
  std::this_thread::sleep_for(2000ms);  // past deadline + grace, within the bound
  EXPECT_EQ(aborts.load(), 0);
  rec->Exit(0, State::kCompleted, Clock::now());
  const auto start = Clock::now();
  rec->Enter(Allreduce(1), {}, std::source_location::current(), start);  // and never Exit
  ASSERT_TRUE(WaitFor([&] { return aborts.load() == 1; }, 10s));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.5);
  wd.Unregister(id);
}

TEST(Watchdog, Sigusr1WritesADumpAndTheDefaultDispositionComesBack) {
  const std::string dir = launch::MakeFreshDir("wd-usr1");
  auto rec = Recorder(3, 4, 60s);
  auto& wd = Watchdog::Get();
  const int id = wd.Register({rec, nullptr, dir, "run"});
  rec->Enter(Allreduce(0), {}, std::source_location::current(), Clock::now());
  rec->Exit(0, State::kCompleted, Clock::now());
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(DumpPath(dir, 3)); }, 5s));
  const RankDump d = ReadDumpFile(DumpPath(dir, 3));
  EXPECT_EQ(d.reason, "SIGUSR1");
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.comms.at(0).entries.at(0).state, State::kCompleted);
  wd.Unregister(id);
  struct sigaction now{};
  ::sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(Watchdog, AnswersARequestThroughTheStore) {
  const std::string rdzv = launch::MakeFreshDir("wd-store");
  const std::string dir = launch::MakeFreshDir("wd-files");
  auto rec = Recorder(0, 2, 60s);
  rec->Enter(Allreduce(0), {}, std::source_location::current(), Clock::now());  // in flight
  auto& wd = Watchdog::Get();
  auto mine = std::make_shared<DumpChannel>(
      store::PrefixedStore(store::OpenStore(rdzv), "run/comm0"), 0, 2);
  const int id = wd.Register({rec, mine, dir, "run"});
  // Another rank (its own store connection) asks, and collects.
  DumpChannel peer(store::PrefixedStore(store::OpenStore(rdzv), "run/comm0"), 1, 2);
  const std::string request = peer.Request();
  RankDump own;
  own.rank = 1;
  own.world_size = 2;
  const auto got = peer.Collect(own, request, Clock::now() + 5s);
  ASSERT_TRUE(got.dumps.at(0).has_value()) << got.notes.at(0);
  EXPECT_EQ(got.dumps[0]->request, request);
  EXPECT_EQ(got.dumps[0]->comms.at(0).entries.at(0).state, State::kEntered);
  EXPECT_LT(got.waited_s, 1.0);  // the watchdog polls every 50 ms
  EXPECT_TRUE(std::filesystem::exists(DumpPath(dir, 0)));
  // A new request is answered again, with a fresh dump.
  rec->Exit(0, State::kCompleted, Clock::now());
  const std::string second = peer.Request();
  EXPECT_NE(second, request);
  const auto again = peer.Collect(own, second, Clock::now() + 5s);
  ASSERT_TRUE(again.dumps.at(0).has_value()) << again.notes.at(0);
  EXPECT_EQ(again.dumps[0]->request, second);
  EXPECT_EQ(again.dumps[0]->comms.at(0).entries.at(0).state, State::kCompleted);
  wd.Unregister(id);
}

// A process with two communicators of different ranks (a subgroup, or the
// communicator of an earlier world still open): each communicator's
// published dumps say its own rank, so a peer reading rank 1's key finds a
// dump of rank 1. (First suspected for the flaky netns failure "dump of
// rank 1 says rank 0"; its cause was the race in the next test.)
TEST(Watchdog, PublishedDumpsCarryTheirCommunicatorsRank) {
  const std::string rdzv = launch::MakeFreshDir("wd-two");
  const std::string dir = launch::MakeFreshDir("wd-two-files");
  auto& wd = Watchdog::Get();
  auto first = Recorder(0, 2, 60s);
  auto second = std::make_shared<FlightRecorder>(
      FlightRecorder::Identity{"comm1", "gloo", 1, 3, 60s, false}, 16);
  const int a = wd.Register({first, std::make_shared<DumpChannel>(
                                        store::PrefixedStore(store::OpenStore(rdzv), "run/comm0"),
                                        0, 2),
                             dir, "run"});
  const int b = wd.Register({second, std::make_shared<DumpChannel>(
                                         store::PrefixedStore(store::OpenStore(rdzv), "run/comm1"),
                                         1, 3),
                             dir, "run"});
  wd.PublishLast(b);
  const auto text = store::OpenStore(rdzv)->TryGet("run/comm1/trace/last/1");
  ASSERT_TRUE(text.has_value());
  const RankDump d = ParseDump(*text, "comm1's last dump");
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.world_size, 3);
  ASSERT_EQ(d.comms.size(), 2u);
  EXPECT_EQ(d.comms[0].name, "comm1");  // its own communicator first
  wd.Unregister(b);
  wd.Unregister(a);
}

// The flaky netns failure's real cause: rank 1's watchdog thread answered
// a dump request while its main thread was destroying the communicator, so
// the registry was already empty and the dump said rank 0 (the default)
// under rank 1's key. A dump is now composed from the answering
// communicator's own recorder, registered or not.
TEST(Watchdog, DumpSaysTheAnsweringCommunicatorsRankEvenWhenUnregistered) {
  auto mine = Recorder(1, 2, 60s);
  RankDump d = ComposeDump("request r", "r", mine.get(), "run", {});  // nothing registered
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.world_size, 2);
  EXPECT_EQ(d.run_id, "run");
  ASSERT_EQ(d.comms.size(), 1u);
  // With other communicators registered, this one first and not twice.
  auto other = std::make_shared<FlightRecorder>(
      FlightRecorder::Identity{"comm1", "gloo", 0, 3, 60s, false}, 16);
  d = ComposeDump("request r", "r", mine.get(), "run",
                  {{other.get(), "run2"}, {mine.get(), "run"}});
  EXPECT_EQ(d.rank, 1);
  ASSERT_EQ(d.comms.size(), 2u);
  EXPECT_EQ(d.comms[0].rank, 1);
  EXPECT_EQ(d.comms[1].name, "comm1");
  // No primary (SIGUSR1): the first registered communicator's rank.
  d = ComposeDump("SIGUSR1", "", nullptr, "", {{other.get(), "run2"}, {mine.get(), "run"}});
  EXPECT_EQ(d.rank, 0);
  EXPECT_EQ(d.run_id, "run2");
}

}  // namespace
}  // namespace ddp::trace
