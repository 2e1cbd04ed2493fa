// What a rank sees when the world goes wrong: a skipped collective (deadline
// + desync report from the flight recorder dumps), a rank that aborts or is
// SIGKILLed (peers fail in time, naming it), checked mode catching
// mismatched counts and ops before the engine. (Every mismatch class of the
// desync report, on both engines: trace_test.)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{2000};
constexpr int kCaughtDeadline = 10;
constexpr int kCaughtPeer = 11;
constexpr int kCaughtCheck = 12;

std::unique_ptr<Comm> Make(const launch::RankEnv& env, bool checked,
                           GlooAllgathervAlgorithm allgatherv = GlooAllgathervAlgorithm::kRing) {
  CommOptions o = OptionsFromRankEnv(env);
  o.timeout = kDeadline;
  o.checked = checked;
  o.gloo_allgatherv = allgatherv;
  return MakeComm(o);
}

// Runs `body`; on a CommError prints "CAUGHT <kind> <ms>" then the message,
// and returns the matching exit code.
int Guarded(const std::function<void()>& body) {
  const auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  };
  try {
    body();
  } catch (const DeadlineError& e) {
    std::printf("CAUGHT deadline %lld\nCONTEXT %s\n%s\n", static_cast<long long>(elapsed()),
                VerdictFields(e.context()).c_str(), e.what());
    return kCaughtDeadline;
  } catch (const PeerError& e) {
    std::printf("CAUGHT peer %lld\n%s\n", static_cast<long long>(elapsed()), e.what());
    return kCaughtPeer;
  } catch (const CheckError& e) {
    std::printf("CAUGHT check %lld\n%s\n", static_cast<long long>(elapsed()), e.what());
    return kCaughtCheck;
  }
  return 0;
}

long long CaughtAfterMs(const std::string& out) {
  const auto pos = out.find("CAUGHT ");
  if (pos == std::string::npos) return -1;
  const auto space = out.find(' ', pos + 7);
  return std::atoll(out.c_str() + space + 1);
}

// The line of `out` that `head` (which starts with its newline) opens, to
// its end; "" when there is none.
std::string LineFrom(const std::string& out, const std::string& head) {
  const auto at = out.find(head);
  if (at == std::string::npos) return "";
  const auto end = out.find('\n', at + 1);
  return out.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

void ExpectNoProcessLeft(const launch::RunResult& result) {
  for (const auto& r : result.ranks) {
    errno = 0;
    EXPECT_EQ(::kill(r.pid, 0), -1) << "pid " << r.pid << " of rank " << r.rank << " still exists";
    EXPECT_EQ(errno, ESRCH);
    EXPECT_EQ(::kill(-r.pid, 0), -1) << "process group " << r.pid << " still exists";
  }
}

// The call sites the ranks print (they run in forked processes): the line
// after the marker.
#define PRINT_NEXT_LINE(tag) std::printf("LINE %s %d\n", tag, __LINE__ + 1)

std::string MarkedSite(const launch::RunResult& result, const std::string& tag) {
  for (const auto& r : result.ranks) {
    const auto p = r.stdout_text.find("LINE " + tag + " ");
    if (p == std::string::npos) continue;
    const auto start = p + tag.size() + 6;
    return "core/comm/failure_test.cc:" + r.stdout_text.substr(start, r.stdout_text.find('\n', start) - start);
  }
  return "(no site " + tag + ")";
}

TEST(Deadline, SkippedCollectiveRaisesOnPeersWithDesyncReport) {
  constexpr int kWorld = 3;
  const auto result = launch::SpawnRanks(kWorld, [](const launch::RankEnv& env) {
    auto comm = Make(env, /*checked=*/false);
    std::vector<double> v = {1.0};
    return Guarded([&] {
      comm->Allreduce(std::span(v));                     // #0 everywhere
      PRINT_NEXT_LINE("skipped");
      if (env.rank != 2) comm->Allreduce(std::span(v));  // #1: rank 2 skips it
      PRINT_NEXT_LINE("next");
      comm->Allreduce(std::span(v));  // #2 on ranks 0, 1; rank 2's #1 (same tag: matches #1)
      if (env.rank == 2) {
        // Stay alive (and connected) past the peers' deadline, like a rank
        // busy elsewhere: they must time out, not see a closed connection.
        std::this_thread::sleep_for(kDeadline + milliseconds(1500));
      }
    });
  });
  ASSERT_FALSE(result.timed_out()) << result.Summary();
  ASSERT_TRUE(result.ranks[2].ok()) << result.Summary();
  std::printf("rank 0 of a world where rank 2 skipped collective #1:\n%s",
              result.ranks[0].stdout_text.c_str());
  const std::string skipped = MarkedSite(result, "skipped"), next = MarkedSite(result, "next");
  for (int r : {0, 1}) {
    const auto& out = result.ranks[r].stdout_text;
    ASSERT_EQ(result.ranks[r].exit_code, kCaughtDeadline) << result.Summary() << out;
    const long long ms = CaughtAfterMs(out);
    EXPECT_GE(ms, kDeadline.count() - 100) << out;
    // The deadline, then at most the wait for the peers' dumps (kDumpWait).
    EXPECT_LE(ms, kDeadline.count() + 2000) << out;
    EXPECT_NE(out.find("deadline exceeded on rank " + std::to_string(r) +
                       "/3: allreduce seq=2 float64 count=1 op=sum"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("\nCONTEXT class=missing ranks culprits=2 op=allreduce seq=2\n"), std::string::npos) << out;
    // Ranks 0 and 1 wait on #2 until their deadlines, which fire within a
    // few milliseconds of each other. A peer dumped on rank r's request may
    // still be waiting, its own deadline a moment away (seen once under a
    // loaded 2-core .ci/run: "rank 0 timed out after 2.01 s ...; rank 1
    // waiting since 2.01 s"), so the report names ranks 0 and 1 together
    // when their states agree and apart when they do not; rank r, which
    // caught the deadline, has timed out either way.
    const std::string line = LineFrom(out, "\ncollective #2 (allreduce float64 x1): rank 2 never entered; ");
    const std::string self = std::to_string(r), peer = std::to_string(1 - r);
    const bool together = line.find("; ranks [0, 1] timed out after ") != std::string::npos;
    const bool apart = line.find("; rank " + self + " timed out after ") != std::string::npos &&
                       (line.find("; rank " + peer + " timed out after ") != std::string::npos ||
                        line.find("; rank " + peer + " waiting since ") != std::string::npos);
    EXPECT_TRUE(together || apart) << "line: " << line << "\n" << out;
    EXPECT_NE(out.find("rank 2: never entered (last: #1 completed at " + next + "; communicator active)"),
              std::string::npos)
        << out;
    // Where the desync began: rank 2 entered #1 from the next call site.
    EXPECT_NE(out.find("call sites first differ at #1: ranks [0, 1] at " + skipped + "; rank 2 at " + next),
              std::string::npos)
        << out;
  }
  ExpectNoProcessLeft(result);
}

TEST(Deadline, RankFinishedEarlyIsNamedInReport) {
  const auto result = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    auto comm = Make(env, false);
    return Guarded([&] {
      comm->Barrier();  // #0
      if (env.rank == 1) {
        comm->Finish();  // done, but keeps its connections
        std::this_thread::sleep_for(kDeadline + milliseconds(2500));
        return;
      }
      comm->Barrier();  // #1: rank 1 never comes
    });
  });
  const auto& out = result.ranks[0].stdout_text;
  ASSERT_EQ(result.ranks[0].exit_code, kCaughtDeadline) << result.Summary() << out;
  EXPECT_NE(out.find("\ncollective #1 (barrier): rank 1 never entered; rank 0 timed out after "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("; communicator finished)"), std::string::npos) << out;
}

// A rank dies mid-run (abort() or SIGKILL): peers fail within the deadline.
class DeadRank : public ::testing::TestWithParam<int> {};

TEST_P(DeadRank, PeersFailWithinDeadline) {
  const int sig = GetParam();
  launch::SpawnOptions spawn;
  spawn.deadline = std::chrono::seconds(20);
  const auto result = launch::SpawnRanks(
      3,
      [sig](const launch::RankEnv& env) {
        auto comm = Make(env, false);
        std::vector<float> v(1000, 1.0f);
        return Guarded([&] {
          comm->Allreduce(std::span(v));
          if (env.rank == 1) {
            if (sig == SIGABRT) std::abort();
            ::raise(SIGKILL);
          }
          for (int i = 0; i < 3; ++i) comm->Allreduce(std::span(v));
        });
      },
      spawn);
  ASSERT_FALSE(result.timed_out()) << result.Summary();
  EXPECT_EQ(result.ranks[1].signal, sig) << result.Summary();
  for (int r : {0, 2}) {
    const auto& o = result.ranks[r];
    EXPECT_TRUE(o.exit_code == kCaughtPeer || o.exit_code == kCaughtDeadline)
        << result.Summary() << o.stdout_text;
    EXPECT_LE(CaughtAfterMs(o.stdout_text), kDeadline.count() + 2000) << o.stdout_text;  // + the dump wait
    // #1, or #0 when rank 1 died before a peer had left #0 (trace_test
    // pins this down).
    EXPECT_NE(o.stdout_text.find(" (allreduce float32 x1000): no dump from rank 1 "
                                 "(stopped, dead or unreachable); "),
              std::string::npos)
        << o.stdout_text;
  }
  std::printf("rank 0 when rank 1 died of signal %d:\n%s", sig, result.ranks[0].stdout_text.c_str());
  EXPECT_EQ(result.first_failed_rank, 1);
  EXPECT_EQ(result.ExitCode(), 128 + sig);
  ExpectNoProcessLeft(result);
}

INSTANTIATE_TEST_SUITE_P(Signals, DeadRank, ::testing::Values(SIGABRT, SIGKILL),
                         [](const auto& info) {
                           return info.param == SIGABRT ? std::string("Abort")
                                                        : std::string("Sigkill");
                         });

// Both Gloo allgatherv algorithms (gloo_allgatherv.h) post many piece
// messages; a peer dying in the middle of them must still fail the others
// within one deadline for the whole call, not one per piece.
class DeadRankInAllgatherv : public ::testing::TestWithParam<GlooAllgathervAlgorithm> {};

TEST_P(DeadRankInAllgatherv, PeersFailWithinDeadline) {
  const GlooAllgathervAlgorithm algorithm = GetParam();
  launch::SpawnOptions spawn;
  spawn.deadline = std::chrono::seconds(20);
  const auto result = launch::SpawnRanks(
      3,
      [algorithm](const launch::RankEnv& env) {
        auto comm = Make(env, /*checked=*/false, algorithm);
        // 4 MiB from rank 2: several pieces in flight when rank 1 dies.
        const std::vector<std::size_t> counts = {1000, 2000, 1 << 20};
        const std::vector<float> mine(counts[static_cast<std::size_t>(env.rank)], 1.0f);
        return Guarded([&] {
          comm->Allgatherv(std::span<const float>(mine), counts);
          if (env.rank == 1) ::raise(SIGKILL);
          for (int i = 0; i < 3; ++i) comm->Allgatherv(std::span<const float>(mine), counts);
        });
      },
      spawn);
  ASSERT_FALSE(result.timed_out()) << result.Summary();
  EXPECT_EQ(result.ranks[1].signal, SIGKILL) << result.Summary();
  for (int r : {0, 2}) {
    const auto& o = result.ranks[r];
    EXPECT_TRUE(o.exit_code == kCaughtPeer || o.exit_code == kCaughtDeadline)
        << result.Summary() << o.stdout_text;
    EXPECT_LE(CaughtAfterMs(o.stdout_text), kDeadline.count() + 2000) << o.stdout_text;
  }
  ExpectNoProcessLeft(result);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, DeadRankInAllgatherv,
                         ::testing::Values(GlooAllgathervAlgorithm::kRing,
                                           GlooAllgathervAlgorithm::kDirect),
                         [](const auto& info) { return std::string(Name(info.param)); });

// Ranks that disagree on the allgatherv algorithm (comm.h: every rank must
// choose the same): no rank returns from the call. Each fails within the
// deadline, or, where a piece arrives larger than the one posted (small
// blocks: one piece against two), Gloo's loop thread aborts the process
// (EnforceNotMet, SIGABRT), as with mismatched counts in raw mode.
class MismatchedAlgorithm : public ::testing::TestWithParam<std::size_t> {};

TEST_P(MismatchedAlgorithm, FailsEveryRankWithinTheDeadline) {
  const std::size_t big = GetParam();
  launch::SpawnOptions spawn;
  spawn.deadline = std::chrono::seconds(20);
  const auto result = launch::SpawnRanks(
      3,
      [big](const launch::RankEnv& env) {
        const std::vector<std::size_t> counts = {100, 200, big};
        const std::vector<float> mine(counts[static_cast<std::size_t>(env.rank)], 1.0f);
        // The rendezvous is guarded too: with small blocks ranks 0 and 1 can
        // be in the call, and Gloo abort rank 1, while rank 2 is still
        // connecting; rank 2 then gets a PeerError from its rendezvous.
        const int rc = Guarded([&] {
          auto comm = Make(env, /*checked=*/false,
                           env.rank == 0 ? GlooAllgathervAlgorithm::kDirect
                                         : GlooAllgathervAlgorithm::kRing);
          comm->Allgatherv(std::span<const float>(mine), counts);
        });
        if (rc == 0) std::printf("RETURNED\n");
        return rc;
      },
      spawn);
  ASSERT_FALSE(result.timed_out()) << result.Summary();
  for (const auto& o : result.ranks) {
    EXPECT_EQ(o.stdout_text.find("RETURNED"), std::string::npos) << o.stdout_text;
    if (o.signal == SIGABRT) continue;
    EXPECT_TRUE(o.exit_code == kCaughtPeer || o.exit_code == kCaughtDeadline)
        << result.Summary() << o.stdout_text;
    EXPECT_LE(CaughtAfterMs(o.stdout_text), kDeadline.count() + 2000) << o.stdout_text;
  }
  std::printf("mismatched allgatherv algorithms, %zu floats from rank 2:\n%s", big,
              result.Summary().c_str());
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, MismatchedAlgorithm, ::testing::Values(300, 1 << 20),
                         [](const auto& info) {
                           return info.param < 1000 ? std::string("Small") : std::string("Large");
                         });

TEST(Checked, MismatchedAllgatherCountsFailOnEveryRankWithOneMessage) {
  const auto result = launch::SpawnRanks(3, [](const launch::RankEnv& env) {
    auto comm = Make(env, /*checked=*/true);
    const std::vector<float> mine(env.rank == 1 ? 2 : 3, 1.0f);
    return Guarded([&] { comm->Allgather(std::span(mine)); });
  });
  const std::string expected =
      "checked mode: ranks disagree on the count of collective #0 (allgather on rank 0): "
      "count 3 on ranks [0, 2]; count 2 on rank [1].\n"
      "  rank 0: allgather seq=0 float32 count=3\n"
      "  rank 1: allgather seq=0 float32 count=2\n"
      "  rank 2: allgather seq=0 float32 count=3\n"
      "The engine was not called.";
  for (const auto& r : result.ranks) {
    ASSERT_EQ(r.exit_code, kCaughtCheck) << result.Summary() << r.stdout_text;
    EXPECT_NE(r.stdout_text.find(expected), std::string::npos) << r.stdout_text;
  }
}

// What raw mode leaves to the deadline or to Gloo's abort (MismatchedAlgorithm
// above), checked mode names before the engine is touched: a different
// algorithm, or a different piece size (DDP_GLOO_ALLGATHERV_PIECE_KIB set on
// one host only).
class CheckedAllgathervVariant : public ::testing::TestWithParam<bool> {};

TEST_P(CheckedAllgathervVariant, MismatchFailsEveryRankWithOneMessage) {
  const bool pieces = GetParam();  // else the algorithm differs
  const auto result = launch::SpawnRanks(3, [pieces](const launch::RankEnv& env) {
    CommOptions o = OptionsFromRankEnv(env);
    o.timeout = kDeadline;
    o.checked = true;
    if (pieces && env.rank == 2) o.gloo_allgatherv_piece_bytes = 4096 * 1024;
    auto comm = MakeComm(o);
    const std::vector<std::size_t> counts = {1, 2, 3};
    const std::vector<float> mine(counts[static_cast<std::size_t>(env.rank)], 1.0f);
    return Guarded([&] {
      comm->Allgatherv(std::span<const float>(mine), counts);  // collective #0
      if (!pieces && env.rank == 0) comm->set_gloo_allgatherv(GlooAllgathervAlgorithm::kDirect);
      comm->Allgatherv(std::span<const float>(mine), counts);  // collective #1
    });
  });
  const std::string expected =
      pieces ? "checked mode: ranks disagree on the Gloo allgatherv algorithm and piece size of "
               "collective #0 (allgatherv on rank 0): ring in 512 KiB pieces on ranks [0, 1]; "
               "ring in 4096 KiB pieces on rank [2]."
             : "checked mode: ranks disagree on the Gloo allgatherv algorithm and piece size of "
               "collective #1 (allgatherv on rank 0): direct in 512 KiB pieces on rank [0]; "
               "ring in 512 KiB pieces on ranks [1, 2].";
  for (const auto& r : result.ranks) {
    ASSERT_EQ(r.exit_code, kCaughtCheck) << result.Summary() << r.stdout_text;
    EXPECT_NE(r.stdout_text.find(expected), std::string::npos) << r.stdout_text;
  }
}

INSTANTIATE_TEST_SUITE_P(Checked, CheckedAllgathervVariant, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? std::string("PieceSize") : std::string("Algorithm");
                         });

TEST(Checked, MismatchedOpsFailOnEveryRank) {
  const auto result = launch::SpawnRanks(3, [](const launch::RankEnv& env) {
    auto comm = Make(env, /*checked=*/true);
    std::vector<int64_t> v = {1, 2};
    return Guarded([&] {
      comm->Barrier();
      if (env.rank == 1) {
        comm->Allreduce(std::span(v));
      } else {
        comm->Allgather(std::span<const int64_t>(v));
      }
    });
  });
  for (const auto& r : result.ranks) {
    ASSERT_EQ(r.exit_code, kCaughtCheck) << result.Summary() << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("checked mode: ranks disagree on the operation of collective #1 "
                                 "(allgather on rank 0): allgather on ranks [0, 2]; "
                                 "allreduce on rank [1]."),
              std::string::npos)
        << r.stdout_text;
  }
}

TEST(Checked, BrokenCommunicatorRefusesLaterCalls) {
  const auto result = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    auto comm = Make(env, /*checked=*/true);
    std::vector<int32_t> v(env.rank + 1, 0);
    try {
      comm->Allreduce(std::span(v));
      return 1;
    } catch (const CheckError&) {
    }
    try {
      comm->Barrier();
    } catch (const CommError& e) {
      std::printf("%s\n", e.what());
      return 0;
    }
    return 2;
  });
  ASSERT_TRUE(result.all_ok()) << result.Summary();
  EXPECT_NE(result.ranks[0].stdout_text.find("barrier on a broken communicator (rank 0): "
                                             "checked-mode mismatch at collective #0"),
            std::string::npos)
      << result.ranks[0].stdout_text;
}

// Raw mode passes a mismatched call to the engine: no CheckError, whatever
// Gloo then does (garbage, an abort, an error) is the outcome.
TEST(Raw, MismatchedCountsReachTheEngine) {
  launch::SpawnOptions spawn;
  spawn.deadline = std::chrono::seconds(20);
  const auto result = launch::SpawnRanks(
      2,
      [](const launch::RankEnv& env) {
        auto comm = Make(env, /*checked=*/false);
        const std::vector<float> mine(env.rank == 0 ? 3 : 2, 1.0f);
        return Guarded([&] { comm->Allgather(std::span(mine)); });
      },
      spawn);
  ASSERT_FALSE(result.timed_out()) << result.Summary();
  for (const auto& r : result.ranks) {
    EXPECT_NE(r.exit_code, kCaughtCheck) << result.Summary();
    EXPECT_EQ(r.stdout_text.find("checked mode"), std::string::npos) << r.stdout_text;
  }
  std::printf("raw mismatched allgather on gloo:\n%s", result.Summary().c_str());
}

// Options built by hand are checked before any store is opened, with the
// launcher's messages (torchrun's variable names) in its order; a store
// object stands in for the rendezvous spec.
TEST(BadOptions, AreConfigErrorsNamingTheVariable) {
  const auto message = [](const CommOptions& o) -> std::string {
    try {
      MakeComm(o);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no ConfigError)";
  };
  const auto with = [](const std::function<void(CommOptions&)>& change) {
    CommOptions o;
    o.rdzv = "/nonexistent/never-opened";
    o.world_size = 2;
    o.local_world_size = 2;
    change(o);
    return o;
  };
  EXPECT_EQ(message(with([](auto& o) { o.world_size = 0; })), "WORLD_SIZE=0 must be >= 1");
  EXPECT_EQ(message(with([](auto& o) { o.rank = 2; })), "RANK=2 must be in [0, WORLD_SIZE=2)");
  EXPECT_EQ(message(with([](auto& o) { o.local_world_size = 0; })),
            "LOCAL_WORLD_SIZE=0 must be >= 1");
  EXPECT_EQ(message(with([](auto& o) { o.local_world_size = 3; })),
            "LOCAL_WORLD_SIZE=3 must be <= WORLD_SIZE=2");
  EXPECT_EQ(message(with([](auto& o) { o.local_rank = 2; })),
            "LOCAL_RANK=2 must be in [0, LOCAL_WORLD_SIZE=2)");
  EXPECT_EQ(message(with([](auto& o) { o.rdzv = ""; })),
            "DDP_RDZV is empty: give a store directory or redis://host:port");
  EXPECT_EQ(message(with([](auto& o) { o.run_id = "a/b"; })),
            "DDP_RUN_ID='a/b' must be non-empty without '/'");
  // Several wrong at once: the first in that order.
  EXPECT_EQ(message(with([](auto& o) {
              o.rank = 5;
              o.rdzv = "";
            })),
            "RANK=5 must be in [0, WORLD_SIZE=2)");
  // With a store object no spec is needed; the run id is still checked.
  const auto store = store::OpenStore(launch::MakeFreshDir("bad-options"));
  EXPECT_EQ(message(with([&](auto& o) {
              o.store = store;
              o.rdzv = "";
              o.run_id = "";
            })),
            "DDP_RUN_ID='' must be non-empty without '/'");
}

}  // namespace
}  // namespace ddp::comm
