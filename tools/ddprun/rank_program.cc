// A rank program for ddprun_test: does one allreduce, then behaves as asked.
//   --fail-rank R --fail-how exit3|abort|sigkill|hang   what rank R does next
//   --others ok|hang|collective   what the other ranks do next (collective:
//                                 allreduce until an error, then exit 5)
//   --ready-dir D                 touch D/ready-<rank> once the allreduce is done
//   --grandchild                  fork a sleeping child first (must not outlive the run)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "core/comm/make_comm.h"

int main(int argc, char** argv) {
  int fail_rank = -1;
  std::string fail_how = "exit3", others = "ok", ready_dir;
  bool grandchild = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fail-rank") fail_rank = std::atoi(argv[++i]);
    else if (a == "--fail-how") fail_how = argv[++i];
    else if (a == "--others") others = argv[++i];
    else if (a == "--ready-dir") ready_dir = argv[++i];
    else if (a == "--grandchild") grandchild = true;
  }
  std::printf("PID %d\n", static_cast<int>(::getpid()));
  if (grandchild) {
    const pid_t child = ::fork();
    if (child == 0) {
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
      std::fprintf(stderr, "%s\n", e.what());
      return 5;
    }
  }
  return 0;
}
