// Supervise and StartChild under faults, with real processes: who is blamed
// when ranks fail together, stalls (SIGSTOP), processes that escape their
// rank's group, descriptors ranks must not inherit, the open-file limit, and
// what survives when the launcher itself is SIGKILLed (nothing: guardian.h).
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "core/cli/config_error.h"
#include "core/launch/failure_report.h"
#include "core/launch/guardian.h"
#include "core/launch/limits.h"
#include "core/launch/spawn.h"
#include "core/launch/testing/processes.h"
#include "gtest/gtest.h"

namespace ddp::launch {
namespace {

using std::chrono::milliseconds;

// The pipe and socket descriptors this process has open besides 0, 1, 2.
std::set<std::string> OpenPipes() {
  std::set<std::string> out;
  DIR* d = ::opendir("/proc/self/fd");
  while (const dirent* e = ::readdir(d)) {
    if (std::atoi(e->d_name) <= 2) continue;
    char target[256] = {0};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) > 0 &&
        (std::strncmp(target, "pipe:", 5) == 0 || std::strncmp(target, "socket:", 7) == 0)) {
      out.insert(std::string(e->d_name) + "=" + target);
    }
  }
  ::closedir(d);
  return out;
}

TEST(StartChild, RanksDoNotInheritEachOthersPipes) {
  // Rank k used to hold the read ends of ranks 0..k-1 (and so kept a dead
  // rank's output open). Every rank must see only its own stdout/stderr.
  const auto result = SpawnRanks(8, [](const RankEnv&) {
    const auto pipes = OpenPipes();
    std::printf("%zu", pipes.size());
    for (const auto& p : pipes) std::printf(" %s", p.c_str());
    return 0;
  });
  ASSERT_TRUE(result.all_ok()) << result.Summary();
  for (const auto& r : result.ranks) {
    // Nothing of the launcher's beyond stdin, stdout and stderr.
    EXPECT_EQ(r.stdout_text, "0") << "rank " << r.rank << " holds: " << r.stdout_text;
  }
}

TEST(Supervise, BlamesTheRankThatFailedFirstNotTheFirstReaped) {
  // Ranks 0, 2 and 3 fail "because of a peer" before rank 1 dies: the
  // launcher sees them end first, as when a dying rank's sockets close
  // before it exits. The root cause is still rank 1.
  const auto result = SpawnRanks(4, [](const RankEnv& env) {
    if (env.rank == 1) {
      std::this_thread::sleep_for(milliseconds(300));
      return 7;
    }
    ReportFailure(true, "peer failure on rank " + std::to_string(env.rank));
    return 5;
  });
  EXPECT_EQ(result.first_failed_rank, 1) << result.Summary();
  EXPECT_EQ(result.ExitCode(), 7);
  EXPECT_NE(result.Summary().find("first failure: rank 1 (exit 7)"), std::string::npos)
      << result.Summary();
  EXPECT_TRUE(result.ranks[0].caused_by_peer);
  EXPECT_NE(result.ranks[0].Describe().find("failed because of a peer: peer failure on rank 0"),
            std::string::npos);
  // Without reports, the first rank seen to end is blamed.
  const auto plain = SpawnRanks(3, [](const RankEnv& env) {
    std::this_thread::sleep_for(milliseconds(env.rank == 2 ? 0 : 400));
    return 9 + env.rank;
  });
  EXPECT_EQ(plain.first_failed_rank, 2) << plain.Summary();
}

TEST(Supervise, AStoppedRankIsAStallEndedAtOnceAndBlamed) {
  SpawnOptions options;
  options.deadline = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  const auto result = SpawnRanks(
      3,
      [](const RankEnv& env) {
        if (env.rank == 1) ::raise(SIGSTOP);  // stalled for good
        std::this_thread::sleep_for(milliseconds(100));
        ReportFailure(true, "timed out waiting for rank 1");
        return 3;
      },
      options);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.reason, StopReason::kStall) << result.Summary();
  EXPECT_LT(secs, 2.0);
  EXPECT_TRUE(result.ranks[1].stopped);
  EXPECT_EQ(result.first_failed_rank, 1);
  EXPECT_NE(result.Summary().find("first failure: rank 1 (stopped by SIGSTOP while its peers waited)"),
            std::string::npos)
      << result.Summary();
  EXPECT_EQ(result.ExitCode(), 128 + SIGSTOP);
}

// Issue 59 (1): ranks that send their own output to /dev/null closed their
// pipes at once, and "ended" used to mean "output closed": the healthy ranks,
// SIGTERMed by fail-fast, looked as if they had ended before it (and so
// not killed by it), and rank 0 was blamed with exit 143. Rank 2 failed
// first, by its own doing: it is blamed and its code is the run's.
TEST(Supervise, BlameIgnoresWhenARankClosedItsOutput) {
  SpawnOptions options;
  options.fail_fast = true;
  const auto result = SpawnRanks(
      3,
      [](const RankEnv&) {
        ::execl("/bin/sh", "sh", "-c",
                "exec >/dev/null 2>&1; if [ \"$RANK\" = 2 ]; then sleep 1; exit 3; fi; sleep 30",
                static_cast<char*>(nullptr));
        return 127;
      },
      options);
  EXPECT_EQ(result.reason, StopReason::kFailFast) << result.Summary();
  EXPECT_EQ(result.first_failed_rank, 2) << result.Summary();
  EXPECT_EQ(result.ExitCode(), 3) << result.Summary();
  EXPECT_TRUE(result.ranks[0].killed) << result.Summary();
  EXPECT_TRUE(result.ranks[1].killed) << result.Summary();
  EXPECT_FALSE(result.ranks[2].killed) << result.Summary();
  // Its end is when it exited (after its 1 s sleep), not when it redirected.
  EXPECT_GE(result.ranks[2].ended_at, milliseconds(900)) << result.Summary();
}

TEST(Supervise, ProcessesThatLeftTheirGroupAreKilledAndCannotHoldTheRunOpen) {
  // Each rank starts a grandchild in a new session (out of reach of the
  // group kill) that keeps the rank's stdout open, then exits 0.
  const auto start = std::chrono::steady_clock::now();
  const auto result = SpawnRanks(2, [](const RankEnv&) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      ::sleep(60);
      ::_exit(0);
    }
    std::printf("GRANDCHILD %d\n", static_cast<int>(child));
    std::fflush(stdout);
    return 0;
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.all_ok()) << result.Summary();
  EXPECT_LT(secs, 5.0);
  for (const auto& r : result.ranks) {
    const pid_t g = std::stoi(r.stdout_text.substr(r.stdout_text.find(' ') + 1));
    EXPECT_TRUE(testing::Gone(g)) << "grandchild " << g << " of rank " << r.rank;
  }
}

// In a child process, so the test's own limits stay as they are.
int InChild(const std::function<int()>& body, std::string* err) {
  auto c = StartChild(0, body);
  SuperviseOptions so;
  so.deadline = std::chrono::seconds(30);
  const auto r = Supervise({c}, so);
  *err = r.ranks[0].stderr_text;
  return r.ranks[0].exited ? r.ranks[0].exit_code : 128 + r.ranks[0].signal;
}

TEST(Limits, TheSoftLimitIsRaisedAndAHardLimitTooLowIsNamed) {
  std::string err;
  EXPECT_EQ(InChild([] {
              rlimit rl{16, 200};
              ::setrlimit(RLIMIT_NOFILE, &rl);
              EnsureFileLimit(FilesNeeded(8), "8 ranks");
              ::getrlimit(RLIMIT_NOFILE, &rl);
              return rl.rlim_cur == static_cast<rlim_t>(FilesNeeded(8)) ? 0 : 1;
            }, &err), 0) << err;
  EXPECT_EQ(InChild([] {
              rlimit rl{16, 16};
              ::setrlimit(RLIMIT_NOFILE, &rl);
              SpawnRanks(8, [](const RankEnv&) { return 0; });
              return 0;
            }, &err), kExitUsage);
  EXPECT_NE(err.find("8 ranks need about 88 open files, but the open-file limit (RLIMIT_NOFILE, "
                     "ulimit -n) is 16 (hard 16)"),
            std::string::npos)
      << err;
  // Running out anyway (descriptors used elsewhere): the error names errno
  // and the limit, it is not "pipe2 failed".
  EXPECT_EQ(InChild([] {
              rlimit rl{12, 12};
              ::setrlimit(RLIMIT_NOFILE, &rl);
              std::vector<ChildProcess> kids;
              for (int i = 0; i < 12; ++i) kids.push_back(StartChild(i, [] { return 0; }));
              return 0;
            }, &err), kExitUsage);
  EXPECT_NE(err.find("pipe2: Too many open files (the open-file limit (RLIMIT_NOFILE"),
            std::string::npos)
      << err;
}

TEST(Guardian, NothingALauncherStartedSurvivesItsSigkill) {
  // A launcher (a child of this test) spawns 2 ranks; each starts a child
  // in its group and a program in a new session, then hangs. The ranks
  // write every pid, then we SIGKILL the launcher: within two seconds every
  // one of them must be gone and its folder removed. This test process is
  // no subreaper meanwhile, so the orphans go to init: only the guardian
  // can kill them. (The one process the guardian cannot find: a child a
  // forked, never exec'd, rank function starts with fork() alone and moves
  // to a new session — it carries neither the group nor the environment
  // marker. See README.md.)
  const std::string dir = MakeFreshDir("guardian");
  const std::string pids_file = dir + "/pids";
  auto launcher = StartChild(0, [&] {
    std::ofstream(pids_file + ".tmp");  // created before the ranks write
    SpawnOptions so;
    so.deadline = std::chrono::seconds(60);
    so.store_dir = dir + "/store";
    SpawnRanks(
        2,
        [&](const RankEnv& env) -> int {
          for (bool new_session : {false, true}) {
            const pid_t c = ::fork();
            if (c == 0) {
              if (!new_session) while (true) ::pause();
              ::setsid();
              ::execl("/bin/sleep", "sleep", "60", nullptr);
              ::_exit(127);
            }
            std::ofstream(pids_file + ".tmp", std::ios::app) << c << "\n";
          }
          std::ofstream(pids_file + ".tmp", std::ios::app) << ::getpid() << "\n";
          if (env.rank == 1) std::ofstream(pids_file + ".ready");
          while (true) ::pause();
        },
        so);
    return 0;
  });
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  ASSERT_TRUE(testing::WaitForFile(pids_file + ".ready", std::chrono::seconds(30)));
  std::this_thread::sleep_for(milliseconds(200));  // rank 0 done writing too
  std::vector<pid_t> pids;
  std::ifstream in(pids_file + ".tmp");
  for (pid_t p; in >> p;) pids.push_back(p);
  ASSERT_EQ(pids.size(), 6u);
  // The launcher's run folder (ddp-rdzv-*) under TEST_TMPDIR.
  const auto before = testing::FilesStartingWith(std::getenv("TEST_TMPDIR"), "ddp-rdzv-");
  ::kill(launcher.pid, SIGKILL);
  EXPECT_TRUE(testing::WaitGone(pids, std::chrono::seconds(2)));
  for (pid_t p : pids) EXPECT_TRUE(testing::Gone(p)) << "pid " << p << " survived the launcher";
  std::this_thread::sleep_for(milliseconds(300));
  const auto after = testing::FilesStartingWith(std::getenv("TEST_TMPDIR"), "ddp-rdzv-");
  EXPECT_LT(after.size(), before.size()) << "the launcher's ddp-rdzv folder was not removed";
  SuperviseOptions reap;
  reap.deadline = std::chrono::seconds(5);
  Supervise({launcher}, reap);
}

// Issue 59 (13): SIGTERM to the launcher stops every rank; none failed by
// its own doing, yet rank 0 was named "first failure" (the last fallback of
// the blame took any failed rank, the stopped ones included). Last in this
// file: the handlers stay installed afterwards.
TEST(Supervise, AfterASignalToTheLauncherNoRankIsBlamed) {
  SpawnOptions options;
  options.fail_fast = true;
  options.forward_signals = true;
  std::thread sender([] {
    std::this_thread::sleep_for(milliseconds(500));
    ::kill(::getpid(), SIGTERM);
  });
  const auto result = SpawnRanks(3, [](const RankEnv&) {
    ::sleep(30);
    return 0;
  }, options);
  sender.join();
  EXPECT_EQ(result.reason, StopReason::kSignal) << result.Summary();
  EXPECT_EQ(result.first_failed_rank, -1) << result.Summary();
  EXPECT_EQ(result.ExitCode(), 128 + SIGTERM) << result.Summary();
  EXPECT_EQ(result.Summary().find("first failure"), std::string::npos) << result.Summary();
  for (const auto& r : result.ranks) EXPECT_TRUE(r.killed) << result.Summary();
}

}  // namespace
}  // namespace ddp::launch
