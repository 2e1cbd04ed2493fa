// A rank program for ddprun's tests and the fault-injection suite: does one
// allreduce, then behaves as asked.
//   --fail-rank R --fail-how exit3|abort|sigkill|hang   what rank R does next
//   --others ok|hang|collective|new-comms   what the other ranks do next:
//       collective: allreduce until an error, then exit 5;
//       new-comms: build one communicator after another (each a rendezvous
//       through the store) with an allreduce on each, until an error, then
//       exit 5 — a run that needs its store all the time
//   --ready-dir D          once the allreduce is done, write D/ready-<rank>:
//                          this rank's pid, then its children's
//   --grandchild           fork a sleeping child first (must not outlive the run)
//   --setsid-grandchild    and/or one in a new session (left the rank's group)
// On an error it reports to the launcher, as the harness does, whether a
// peer caused it (failure_report.h).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/comm/make_comm.h"
#include "core/harness/world.h"

namespace {

pid_t SleepingChild(bool new_session) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (new_session) ::setsid();
    while (true) ::pause();
  }
  std::printf("GRANDCHILD %d\n", static_cast<int>(child));
  return child;
}

int Fail(const std::exception& e) {
  ddp::harness::ReportRankFailure(e);
  std::fprintf(stderr, "%s\n", e.what());
  return 5;
}

bool IsBehaviour(const std::string& v) {
  for (const char* b : {"exit3", "abort", "sigkill", "hang", "ok", "collective", "new-comms"}) {
    if (v == b) return true;
  }
  return false;
}

// --help (error == nullptr): the flags on stdout, exit 0; otherwise the error
// and the flags on stderr, exit 2.
int Usage(const char* error) {
  constexpr const char* kFlags =
      "usage: rank_program [--fail-rank R] [--fail-how exit3|abort|sigkill|hang]\n"
      "                    [--others ok|hang|collective|new-comms] [--ready-dir D]\n"
      "                    [--grandchild] [--setsid-grandchild]\n"
      "  a test fixture: one allreduce, then what the flags ask; run it under ddprun\n";
  if (error == nullptr) {
    std::printf("%s", kFlags);
    return 0;
  }
  std::fprintf(stderr, "%s\n%s", error, kFlags);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int fail_rank = -1;
  std::string fail_how = "exit3", others = "ok", ready_dir;
  bool grandchild = false, setsid_grandchild = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--fail-rank" || a == "--fail-how" || a == "--others" || a == "--ready-dir";
    if (takes_value && i + 1 >= argc) return Usage(("rank_program: " + a + " needs a value").c_str());
    if (a == "--help" || a == "-h") return Usage(nullptr);
    if (a == "--fail-rank") fail_rank = std::atoi(argv[++i]);
    else if (a == "--fail-how") fail_how = argv[++i];
    else if (a == "--others") others = argv[++i];
    else if (a == "--ready-dir") ready_dir = argv[++i];
    else if (a == "--grandchild") grandchild = true;
    else if (a == "--setsid-grandchild") setsid_grandchild = true;
    else return Usage(("rank_program: unknown flag " + a).c_str());
  }
  // Either flag may name any behaviour; a typo must not pass as "exit 0".
  for (const auto& [flag, value] : {std::pair{"--fail-how", fail_how}, std::pair{"--others", others}}) {
    if (!IsBehaviour(value)) {
      return Usage((std::string("rank_program: ") + flag + " " + value +
                    ": allowed exit3, abort, sigkill, hang, ok, collective, new-comms")
                       .c_str());
    }
  }
  // Without a rank's environment (RANK, WORLD_SIZE, ...) there is no world to
  // join: say so and exit 2 before forking anything.
  ddp::comm::CommOptions options;
  try {
    options = ddp::comm::OptionsFromEnvironment();
  } catch (const ddp::comm::ConfigError& e) {
    std::fprintf(stderr, "rank_program: %s (run it under ddprun)\n", e.what());
    return 2;
  }
  std::printf("PID %d\n", static_cast<int>(::getpid()));
  std::vector<pid_t> children;
  if (grandchild) children.push_back(SleepingChild(false));
  if (setsid_grandchild) children.push_back(SleepingChild(true));
  std::fflush(stdout);
  auto comm = ddp::comm::MakeComm(options);
  std::vector<double> v = {1.0};
  comm->Allreduce(std::span(v));
  std::printf("SUM %g\n", v[0]);
  std::fflush(stdout);
  if (!ready_dir.empty()) {
    const std::string path = ready_dir + "/ready-" + std::to_string(comm->rank());
    {
      std::ofstream out(path + ".tmp");
      out << ::getpid() << "\n";
      for (pid_t c : children) out << c << "\n";
    }
    std::rename((path + ".tmp").c_str(), path.c_str());  // readers see it whole
  }
  const std::string what = comm->rank() == fail_rank ? fail_how : others;
  if (what == "exit3") return 3;
  if (what == "abort") std::abort();
  if (what == "sigkill") ::raise(SIGKILL);
  if (what == "hang") {
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (what == "collective") {
    try {
      while (true) comm->Allreduce(std::span(v));
    } catch (const std::exception& e) {
      return Fail(e);
    }
  }
  if (what == "new-comms") {
    try {
      while (true) {
        auto next = ddp::comm::MakeComm(ddp::comm::OptionsFromEnvironment());
        next->Allreduce(std::span(v));
        next->Finish();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } catch (const std::exception& e) {
      return Fail(e);
    }
  }
  return 0;
}
