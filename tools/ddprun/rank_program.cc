// A rank program for ddprun_test: does one allreduce, then behaves as asked.
//   --fail-rank R --fail-how exit3|abort|sigkill|hang   what rank R does next
//   --others ok|hang|collective   what the other ranks do next (collective:
//                                 allreduce until an error, then exit 5)
//   --ready-dir D                 touch D/ready-<rank> once the allreduce is done
//   --grandchild                  fork a sleeping child first (must not outlive the run)
//   --setsid-grandchild           the same, in a new session (left the rank's group)
// On a collective error it reports to the launcher, as the harness does,
// whether a peer caused it (failure_report.h).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "core/comm/make_comm.h"
#include "core/harness/world.h"

int main(int argc, char** argv) {
  int fail_rank = -1;
  std::string fail_how = "exit3", others = "ok", ready_dir;
  bool grandchild = false, setsid_grandchild = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fail-rank") fail_rank = std::atoi(argv[++i]);
    else if (a == "--fail-how") fail_how = argv[++i];
    else if (a == "--others") others = argv[++i];
    else if (a == "--ready-dir") ready_dir = argv[++i];
    else if (a == "--grandchild") grandchild = true;
    else if (a == "--setsid-grandchild") setsid_grandchild = true;
  }
  std::printf("PID %d\n", static_cast<int>(::getpid()));
  if (grandchild || setsid_grandchild) {
    const pid_t child = ::fork();
    if (child == 0) {
      if (setsid_grandchild) ::setsid();
      while (true) ::pause();
    }
    std::printf("GRANDCHILD %d\n", static_cast<int>(child));
  }
  std::fflush(stdout);
  auto comm = ddp::comm::MakeComm(ddp::comm::OptionsFromEnvironment());
  std::vector<double> v = {1.0};
  comm->Allreduce(std::span(v));
  std::printf("SUM %g\n", v[0]);
  std::fflush(stdout);
  if (!ready_dir.empty()) {
    std::ofstream(ready_dir + "/ready-" + std::to_string(comm->rank())) << "ready\n";
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
      ddp::harness::ReportRankFailure(e);
      std::fprintf(stderr, "%s\n", e.what());
      return 5;
    }
  }
  return 0;
}
