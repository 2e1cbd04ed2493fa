// The start-up bound (options.h): on real Gloo ranks a short collective
// deadline bounds the collectives, not the rendezvous, and a failure says
// which phase expired; the first collective of an engine that connects
// inside it (NCCL) gets the bound too (a scripted engine, base class only).
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDeadline{1000};
constexpr milliseconds kStartup{6000};
constexpr milliseconds kLate{2500};  // past the deadline, within the start-up bound

CommOptions Options(const launch::RankEnv& env, milliseconds startup) {
  CommOptions o = OptionsFromRankEnv(env);
  o.timeout = kDeadline;
  o.startup_timeout = startup;
  return o;
}

// One allreduce, then one more; prints the error and returns 3 on failure.
int TwoAllreduces(Comm& comm) {
  std::vector<double> v = {1.0};
  comm.Allreduce(std::span<double>(v));
  comm.Allreduce(std::span<double>(v));
  return v[0] == 4.0 ? 0 : 4;
}

int Guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const CommError& e) {
    std::printf("ERROR %s\n", e.what());
    return 3;
  }
}

TEST(Startup, PeerJoiningLateWithinTheStartUpBoundIsNoFailure) {
  const auto r = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    return Guarded([&] {
      if (env.rank == 1) std::this_thread::sleep_for(kLate);  // slow to start
      auto comm = MakeComm(Options(env, kStartup));
      return TwoAllreduces(*comm);
    });
  });
  EXPECT_TRUE(r.all_ok()) << r.Summary() << r.ranks[0].stdout_text;
}

TEST(Startup, LaterCollectivesKeepTheShortDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    return Guarded([&] {
      auto comm = MakeComm(Options(env, kStartup));
      std::vector<double> v = {1.0};
      comm->Allreduce(std::span<double>(v));
      if (env.rank == 1) std::this_thread::sleep_for(kLate);
      comm->Allreduce(std::span<double>(v));
      return 0;
    });
  });
  EXPECT_EQ(r.ranks[0].exit_code, 3) << r.Summary();
  EXPECT_NE(r.ranks[0].stdout_text.find("deadline exceeded on rank 0/2"), std::string::npos)
      << r.ranks[0].stdout_text;
  EXPECT_NE(r.ranks[0].stdout_text.find("(deadline 1.00 s)"), std::string::npos)
      << r.ranks[0].stdout_text;
  EXPECT_LT(std::chrono::steady_clock::now() - start, kStartup);
}

TEST(Startup, PeerThatNeverJoinsFailsTheRendezvousAtTheStartUpBound) {
  const auto r = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    if (env.rank == 1) return 0;  // never creates its communicator
    return Guarded([&] {
      const auto start = std::chrono::steady_clock::now();
      try {
        auto comm = MakeComm(Options(env, milliseconds(2500)));
      } catch (...) {
        std::printf("AFTER %lld ms\n",
                    static_cast<long long>(std::chrono::duration_cast<milliseconds>(
                                               std::chrono::steady_clock::now() - start)
                                               .count()));
        throw;
      }
      return 0;
    });
  });
  const std::string& out = r.ranks[0].stdout_text;
  EXPECT_EQ(r.ranks[0].exit_code, 3) << r.Summary() << out;
  EXPECT_NE(out.find("gloo rendezvous of rank 0 of 2"), std::string::npos) << out;
  EXPECT_NE(out.find("start-up bound 2500 ms"), std::string::npos) << out;
  const auto at = out.find("AFTER ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_GE(std::atoll(out.c_str() + at + 6), 2500) << out;  // not the 1 s deadline
}

// Gloo has connected every pair before its first collective, which is
// then an ordinary one: a peer late to it is caught at the deadline.
TEST(Startup, GlooFirstCollectiveHasTheDeadline) {
  const auto r = launch::SpawnRanks(2, [](const launch::RankEnv& env) {
    return Guarded([&] {
      auto comm = MakeComm(Options(env, kStartup));
      if (env.rank == 1) {
        std::this_thread::sleep_for(kLate);
        return 0;
      }
      return TwoAllreduces(*comm);
    });
  });
  const std::string& out = r.ranks[0].stdout_text;
  EXPECT_EQ(r.ranks[0].exit_code, 3) << r.Summary() << out;
  EXPECT_NE(out.find("allreduce seq=0"), std::string::npos) << out;
  EXPECT_NE(out.find("(deadline 1.00 s)"), std::string::npos) << out;
}

// An engine that connects inside its first collective (NCCL) gives that
// collective the start-up bound, and its failure says so; a scripted
// engine, as no GPU is needed to check the base class's bookkeeping.
class ScriptedComm final : public Comm {
 public:
  explicit ScriptedComm(CommSetup s) : Comm(std::move(s)) {}
  std::vector<milliseconds> seen;  // call_deadline() inside each call

 protected:
  void EngineAllreduce(void*, std::size_t, DType, ReduceOp, uint32_t) override {
    seen.push_back(call_deadline());
    if (seen.size() >= 3) throw EngineFailure(EngineFailure::Kind::kTimeout, "scripted");
  }
  void EngineBarrier(uint32_t) override {
    seen.push_back(call_deadline());
    throw EngineFailure(EngineFailure::Kind::kTimeout, "scripted");
  }
  void EngineAllgather(const void*, void*, std::size_t, DType, uint32_t) override {}
  void EngineAllgatherv(const void*, std::size_t, void*, std::span<const std::size_t>, DType,
                        uint32_t) override {}
  void EngineBroadcast(void*, std::size_t, DType, int, uint32_t) override {}
  void EngineReduceScatter(const void*, void*, std::size_t, DType, uint32_t) override {}
  std::vector<Fingerprint> EngineExchangeFingerprints(const Fingerprint&, uint32_t) override {
    return {};
  }
};

CommSetup Scripted(bool lazy) {
  CommSetup s;
  s.backend = "scripted";
  s.timeout = kDeadline;
  s.startup_timeout = kStartup;
  s.lazy_connect = lazy;
  s.trace_entries = 0;
  return s;
}

TEST(Startup, LazyEngineGetsTheStartUpBoundForItsFirstCollectiveOnly) {
  ScriptedComm comm(Scripted(/*lazy=*/true));
  std::vector<double> v = {1.0};
  comm.Allreduce(std::span<double>(v));
  comm.Allreduce(std::span<double>(v));
  EXPECT_EQ(comm.seen, (std::vector<milliseconds>{kStartup, kDeadline}));
  try {
    comm.Allreduce(std::span<double>(v));
    ADD_FAILURE() << "no DeadlineError";
  } catch (const DeadlineError& e) {
    EXPECT_NE(std::string(e.what()).find("(deadline 1.00 s)"), std::string::npos) << e.what();
    EXPECT_EQ(e.context().deadline, kDeadline);
  }
}

TEST(Startup, LazyEngineFailingItsFirstCollectiveNamesTheStartUpPhase) {
  ScriptedComm comm(Scripted(/*lazy=*/true));
  try {
    comm.Barrier();
    ADD_FAILURE() << "no DeadlineError";
  } catch (const DeadlineError& e) {
    EXPECT_NE(std::string(e.what()).find("(first collective: start-up bound 6.00 s)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.context().deadline, kStartup);
  }
}

TEST(Startup, EagerEngineKeepsTheDeadlineForItsFirstCollective) {
  ScriptedComm comm(Scripted(/*lazy=*/false));
  try {
    comm.Barrier();
    ADD_FAILURE() << "no DeadlineError";
  } catch (const DeadlineError& e) {
    EXPECT_NE(std::string(e.what()).find("(deadline 1.00 s)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(comm.seen, std::vector<milliseconds>{kDeadline});
}

TEST(Startup, DefaultIsTheLongerOfTheDeadlineAndAMinuteOnNcclTheDeadlineOnGloo) {
  CommOptions o;
  o.backend = "nccl";
  auto none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(ResolveStartupTimeout(o, milliseconds(1500), none), std::chrono::seconds(60));
  EXPECT_EQ(ResolveStartupTimeout(o, std::chrono::seconds(90), none), std::chrono::seconds(90));
  o.backend = "gloo";
  EXPECT_EQ(ResolveStartupTimeout(o, milliseconds(1500), none), milliseconds(1500));
  auto env = [](const std::string& k) -> std::optional<std::string> {
    if (k == kEnvStartupTimeout) return std::string("7.5");
    return std::nullopt;
  };
  EXPECT_EQ(ResolveStartupTimeout(o, milliseconds(1500), env), milliseconds(7500));
  auto bad = [](const std::string& k) -> std::optional<std::string> {
    if (k == kEnvStartupTimeout) return std::string("soon");
    return std::nullopt;
  };
  try {
    ResolveStartupTimeout(o, milliseconds(1500), bad);
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DDP_PITFALLS_STARTUP_TIMEOUT='soon'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddp::comm
