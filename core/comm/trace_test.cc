// The flight recorder on real ranks (Gloo; the _nccl build on NCCL): every
// way a world falls apart ends in a desync report whose first line names the
// collective, the culprit ranks and the call site, within deadline + 1 s:
// uneven steps (missing ranks), allreduce against barrier (op type), unequal
// counts (size), float64 against int64 (dtype), a SIGSTOPped rank and a
// killed rank (no dump from them, named). The dump files tell the same story
// to the analyzer afterwards. And a rank whose main thread is stuck inside
// the engine still dumps, on a store request and on SIGUSR1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"
#include "core/testing/backend.h"
#include "core/trace/analyze.h"
#include "core/trace/dump_json.h"
#include "core/trace/exchange.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kFile[] = "core/comm/trace_test.cc";

// The NCCL deadline, full and where NCCL ranks share a GPU (core/testing/
// README.md: each world costs seconds there, and four of the cases wait out
// a deadline). A first collective has the start-up bound anyway (options.h);
// later ones took 50-140 ms on the shared H100 (0.3 s for a first one), so
// 3 s keeps a margin of 10 and more.
// There the size, dtype and stopped-rank cases run on Gloo only (the killed
// rank is NCCL's "no dump" case).
std::chrono::milliseconds NcclDeadline() {
  static const std::chrono::milliseconds deadline = testing::PickSizes(
      3, std::chrono::milliseconds(15000), std::chrono::milliseconds(3000),
      "NCCL deadline 3 s (not 15 s); the size, dtype and stopped-rank cases are skipped");
  return deadline;
}
constexpr char kGlooOnly[] = "this case runs on the Gloo twin (see NcclDeadline)";

// NCCL ranks sharing one GPU talk over sockets: their first collective can
// take seconds (it has the start-up bound).
std::chrono::milliseconds Deadline() {
  return testing::TestBackend() == "nccl" ? NcclDeadline() : std::chrono::milliseconds(1500);
}

// The ranks run in forked processes: they print the call sites the parent
// checks. "AT <tag> <file>:<line>" names the line after the macro.
#define AT_NEXT_LINE(tag)                                          \
  do {                                                             \
    std::printf("AT %s %s:%d\n", tag, kFile, __LINE__ + 1);       \
    std::fflush(stdout);                                           \
  } while (0)

struct World {
  launch::RunResult run;
  std::string dir;  // the ranks' trace folder
  // The output of the first failing rank that printed a report.
  const std::string& out() const {
    const std::string* first = nullptr;
    for (const auto& r : run.ranks) {
      if (r.stdout_text.find("VERDICT ") == std::string::npos) continue;
      if (first == nullptr || r.rank == run.first_failed_rank) first = &r.stdout_text;
    }
    static const std::string none;
    return first != nullptr ? *first : none;
  }
};

// Runs `body` on W ranks of the test's backend. A rank that catches a
// deadline or peer error prints "VERDICT <line>", "CLASS <class>" and the
// whole message, and exits 3 (the launcher then stops the others, unless
// fail_fast is off: a killed rank would make it stop them before they report).
World RunWorld(int world, const std::function<void(Comm&, const launch::RankEnv&)>& body,
               bool fail_fast = true) {
  World w;
  w.dir = launch::MakeFreshDir("trace-test");
  launch::SpawnOptions so;
  so.backend = testing::TestBackend();
  so.share_gpu = so.backend == "nccl";
  so.deadline = Deadline() * 4 + 20s;
  so.fail_fast = fail_fast;
  so.kill_grace = 500ms;
  const std::string dir = w.dir;
  w.run = launch::SpawnRanks(
      world,
      [&body, dir](const launch::RankEnv& env) {
        CommOptions o = OptionsFromRankEnv(env);
        o.timeout = Deadline();
        o.trace_dir = dir;
        auto comm = MakeComm(o);
        auto report = [](const FailureContext& ctx, const char* what) {
          std::printf("VERDICT %s\nCLASS %s\n%s\n", ctx.verdict.c_str(), ctx.mismatch_class.c_str(), what);
          std::fflush(stdout);
          return 3;
        };
        try {
          body(*comm, env);
          return 0;
        } catch (const DeadlineError& e) {
          return report(e.context(), e.what());
        } catch (const PeerError& e) {
          return report(e.context(), e.what());
        }
      },
      so);
  return w;
}

std::string Line(const std::string& out, const std::string& tag);

// Out of band (the store, no collective): returns once every rank got here,
// so a rank stopped or killed afterwards cannot leave a peer behind in the
// collective before.
void AllGotHere(const launch::RankEnv& env, const std::string& tag) {
  auto store = store::PrefixedStore(store::OpenStore(env.rdzv), "test/" + tag);
  store->Put(std::to_string(env.rank), "1");
  for (int r = 0; r < env.world_size; ++r) {
    while (!store->TryGet(std::to_string(r))) std::this_thread::sleep_for(5ms);
  }
}

// The call site a rank printed with AT_NEXT_LINE(tag).
std::string Site(const World& w, const std::string& tag) {
  for (const auto& r : w.run.ranks) {
    const std::string site = Line(r.stdout_text, "AT " + tag);
    if (!site.empty()) return site;
  }
  return "(no rank printed site " + tag + ")";
}

std::string Line(const std::string& out, const std::string& tag) {
  const auto p = out.find(tag + " ");
  if (p == std::string::npos) return "";
  const auto start = p + tag.size() + 1;
  return out.substr(start, out.find('\n', start) - start);
}

// The verdict the first failing rank printed, its class, and that the
// report was collected within the dump wait (Comm::kDumpWait); then the analyzer over the dump
// files agrees on class and collective.
void ExpectVerdict(const World& w, const std::string& prefix, const std::string& site,
                   const std::string& klass, int64_t seq) {
  const std::string& out = w.out();
  ASSERT_FALSE(w.run.timed_out()) << w.run.Summary();
  ASSERT_FALSE(out.empty()) << "no rank printed a report: " << w.run.Summary();
  const std::string verdict = Line(out, "VERDICT");
  EXPECT_EQ(verdict.rfind(prefix, 0), 0u) << "verdict: " << verdict << "\n" << out;
  EXPECT_NE(verdict.find(" at " + site), std::string::npos) << verdict;
  EXPECT_EQ(Line(out, "CLASS"), klass) << out;
  const auto p = out.find("collected in ");
  ASSERT_NE(p, std::string::npos) << out;
  // The wait, and the analysis (slow on a loaded 2-core machine).
  EXPECT_LE(std::atof(out.c_str() + p + 13), Comm::kDumpWait.count() / 1000.0 + 0.4) << out;
  std::printf("rank %d's desync report:\n%s\n", w.run.first_failed_rank, out.c_str());

  const auto dumps = trace::ReadDumpDir(w.dir);
  const trace::Analysis a = trace::Analyze(dumps);
  EXPECT_EQ(a.klass, klass) << a.report;
  EXPECT_EQ(a.seq, seq) << a.report;
  EXPECT_NE(a.verdict.find(" at " + site), std::string::npos) << a.report;
}

TEST(FlightRecorder, UnevenStepsNameTheRanksThatNeverEnteredAndTheCallSite) {
  DDP_REQUIRE_BACKEND();
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> grad(4, 1.0);
    const int steps = rank == 0 ? 3 : 2;  // rank 0 has one batch more
    for (int step = 0; step < steps; ++step) {
      if (step == 0) AT_NEXT_LINE("grad");
      comm.Allreduce(std::span(grad));
    }
    comm.Finish();
    std::this_thread::sleep_for(Deadline() + 3s);  // alive: the job ends with its last worker
  });
  ExpectVerdict(w, "collective #2 (allreduce float64 x4): ranks [1, 2] never entered; rank 0 timed out after ",
                Site(w, "grad"), "missing ranks", 2);
  EXPECT_NE(w.out().find("ranks [1, 2]: never entered (last: #1 completed at " + Site(w, "grad") +
                         "; communicator finished)"),
            std::string::npos)
      << w.out();
}

TEST(FlightRecorder, AllreduceAgainstBarrierIsAnOpTypeMismatch) {
  DDP_REQUIRE_BACKEND();
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> v(4, 1.0);
    comm.Allreduce(std::span(v));
    if (rank == 1) {
      AT_NEXT_LINE("barrier");
      comm.Barrier();
    } else {
      AT_NEXT_LINE("allreduce");
      comm.Allreduce(std::span(v));
    }
    comm.Allreduce(std::span(v));
  });
  ExpectVerdict(w,
                "collective #1 (op type mismatch): allreduce float64 x4 on ranks [0, 2] at " +
                    Site(w, "allreduce") + "; barrier on rank 1 at " + Site(w, "barrier"),
                Site(w, "barrier"), "op type", 1);
}

TEST(FlightRecorder, UnequalCountsAreASizeMismatch) {
  DDP_REQUIRE_BACKEND();
  DDP_SKIP_IF_SHARED_GPU(3, kGlooOnly);
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> v(4, 1.0), mine(rank == 1 ? 5 : 4, 1.0);
    comm.Allreduce(std::span(v));
    AT_NEXT_LINE("mine");
    comm.Allreduce(std::span(mine));
    comm.Allreduce(std::span(v));  // whoever got through #1 (Gloo lets some) waits here
  });
  ExpectVerdict(w,
                "collective #1 (size mismatch): allreduce float64 x4 on ranks [0, 2] at " +
                    Site(w, "mine") + "; allreduce float64 x5 on rank 1 at " + Site(w, "mine"),
                Site(w, "mine"), "size", 1);
}

TEST(FlightRecorder, Float64AgainstInt64IsADtypeMismatch) {
  DDP_REQUIRE_BACKEND();
  DDP_SKIP_IF_SHARED_GPU(3, kGlooOnly);
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> v(4, 1.0);
    std::vector<int64_t> n(4, 1);  // the same bytes: the engine may well let it through
    comm.Allreduce(std::span(v));
    if (rank == 1) {
      AT_NEXT_LINE("int64");
      comm.Allreduce(std::span(n));
    } else {
      AT_NEXT_LINE("float64");
      comm.Allreduce(std::span(v));
    }
    if (rank == 1) {
      std::this_thread::sleep_for(Deadline() + 3s);  // alive, but out of step from here on
      return;
    }
    comm.Allreduce(std::span(v));
  });
  ExpectVerdict(w,
                "collective #1 (dtype mismatch): allreduce float64 x4 on ranks [0, 2] at " +
                    Site(w, "float64") + "; allreduce int64 x4 on rank 1 at " + Site(w, "int64"),
                Site(w, "int64"), "dtype", 1);
}

TEST(FlightRecorder, AStoppedRankSendsNoDumpAndIsNamed) {
  DDP_REQUIRE_BACKEND();
  DDP_SKIP_IF_SHARED_GPU(3, kGlooOnly);
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> v(4, 1.0);
    comm.Allreduce(std::span(v));
    AllGotHere(env, "stop");
    if (rank == 2) ::raise(SIGSTOP);  // every thread stops, its watchdog too
    AT_NEXT_LINE("after");
    comm.Allreduce(std::span(v));
  });
  ExpectVerdict(w,
                "collective #1 (allreduce float64 x4): no dump from rank 2 (stopped, dead or "
                "unreachable); ",
                Site(w, "after"), "state", 1);
  // The launcher's SIGTERM, which the stopped rank acts on once the launcher
  // continues it (core/launch/supervise.cc).
  EXPECT_EQ(w.run.ranks[2].signal, SIGTERM) << w.run.Summary();
}

TEST(FlightRecorder, AKilledRankSendsNoDumpAndIsNamed) {
  DDP_REQUIRE_BACKEND();
  const World w = RunWorld(3, [](Comm& comm, const launch::RankEnv& env) {
    const int rank = env.rank;
    std::vector<double> v(4, 1.0);
    comm.Allreduce(std::span(v));
    AllGotHere(env, "kill");
    if (rank == 1) ::raise(SIGKILL);
    AT_NEXT_LINE("after");
    comm.Allreduce(std::span(v));
  }, /*fail_fast=*/false);
  EXPECT_EQ(w.run.ranks[1].signal, SIGKILL);
  ExpectVerdict(w,
                "collective #1 (allreduce float64 x4): no dump from rank 1 (stopped, dead or "
                "unreachable); ",
                Site(w, "after"), "state", 1);
}

// Rank 0 blocks inside the engine (no peer ever joins #1, long deadline);
// rank 1 asks for dumps through the store, then sends rank 0 SIGUSR1: rank
// 0's watchdog answers both while its main thread is still stuck.
TEST(FlightRecorder, AStuckRankDumpsOnAStoreRequestAndOnSigusr1) {
  DDP_REQUIRE_BACKEND();
  launch::SpawnOptions so;
  so.backend = testing::TestBackend();
  so.share_gpu = so.backend == "nccl";
  so.deadline = Deadline() + 60s;
  so.fail_fast = true;
  const std::string dir = launch::MakeFreshDir("trace-stuck");
  const auto run = launch::SpawnRanks(
      3,
      [&dir](const launch::RankEnv& env) {
        CommOptions o = OptionsFromRankEnv(env);
        o.timeout = Deadline() + 30s;
        o.trace_dir = dir;
        auto comm = MakeComm(o);
        std::vector<double> v(4, 1.0);
        comm->Allreduce(std::span(v));
        if (env.rank == 0) {
          AT_NEXT_LINE("stuck");
          comm->Allreduce(std::span(v));  // nobody else comes
          return 0;
        }
        if (env.rank == 2) {
          std::this_thread::sleep_for(Deadline() + 60s);  // alive; the launcher ends it
          return 0;
        }
        std::this_thread::sleep_for(500ms);
        trace::DumpChannel channel(
            store::PrefixedStore(store::OpenStore(env.rdzv), env.run_id + "/comm0"), 1, 3);
        const std::string request = channel.Request();
        trace::RankDump mine;
        mine.rank = 1;
        mine.world_size = 3;
        const auto got = channel.Collect(mine, request, Clock::now() + 3s);
        if (!got.dumps[0]) {
          std::printf("NO DUMP FROM RANK 0: %s\n", got.notes[0].c_str());
          return 4;
        }
        const trace::RankDump& d = *got.dumps[0];
        const auto& e = d.comms.at(0).entries.back();
        std::printf("REQUEST seq=%lld state=%s line=%d waiting=%.2f reason=%s\n",
                    static_cast<long long>(e.seq), trace::Name(e.state), e.site.line,
                    d.dump_unix_s - e.enter_unix_s, d.reason.c_str());
        ::kill(static_cast<pid_t>(d.pid), SIGUSR1);
        const std::string path = trace::DumpPath(dir, 0);
        for (int i = 0; i < 300; ++i) {
          if (std::filesystem::exists(path) && trace::ReadDumpFile(path).reason == "SIGUSR1") {
            const auto f = trace::ReadDumpFile(path);
            std::printf("SIGUSR1 seq=%lld state=%s\n",
                        static_cast<long long>(f.comms.at(0).entries.back().seq),
                        trace::Name(f.comms.at(0).entries.back().state));
            return 5;  // done: end the world (fail-fast stops rank 0)
          }
          std::this_thread::sleep_for(10ms);
        }
        std::printf("NO SIGUSR1 DUMP\n");
        return 4;
      },
      so);
  const std::string& out = run.ranks[1].stdout_text;
  ASSERT_EQ(run.ranks[1].exit_code, 5) << run.Summary() << out << run.ranks[1].stderr_text;
  const std::string site = Line(run.ranks[0].stdout_text, "AT stuck");
  const std::string line = site.substr(site.rfind(':') + 1);
  const std::string request = Line(out, "REQUEST");
  EXPECT_EQ(request.rfind("seq=1 state=entered line=" + line + " waiting=", 0), 0u) << out;
  EXPECT_GE(std::atof(request.c_str() + request.find("waiting=") + 8), 0.3) << out;
  EXPECT_NE(request.find("reason=request rank1-"), std::string::npos) << out;
  EXPECT_EQ(Line(out, "SIGUSR1"), "seq=1 state=entered") << out;
  EXPECT_NE(run.ranks[0].stderr_text.find("SIGUSR1: flight recorder dump written to " +
                                          trace::DumpPath(dir, 0)),
            std::string::npos)
      << run.ranks[0].stderr_text;
}

}  // namespace
}  // namespace ddp::comm
