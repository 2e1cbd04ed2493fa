#include "core/launch/testing/run_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace ddp::launch::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_mu;
std::optional<Clock::time_point> g_fault_at;

}  // namespace

void MarkFault() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_fault_at = Clock::now();
}

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/ddp_pitfalls/" + path;
}

CommandResult RunCommand(const Command& command) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_fault_at.reset();
  }
  const auto start = Clock::now();
  auto child = StartChild(0, [&command] {
    for (const auto& [k, v] : command.env) ::setenv(k.c_str(), v.c_str(), 1);
    for (const auto& k : command.unset_env) ::unsetenv(k.c_str());
    if (command.file_limit || command.soft_file_limit) {
      rlimit rl{};
      ::getrlimit(RLIMIT_NOFILE, &rl);
      if (command.file_limit) rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(*command.file_limit);
      if (command.soft_file_limit) rl.rlim_cur = static_cast<rlim_t>(*command.soft_file_limit);
      ::setrlimit(RLIMIT_NOFILE, &rl);
    }
    std::vector<char*> argv;
    for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    return 127;
  });
  std::thread side;
  if (command.while_running) side = std::thread(command.while_running, child.pid);
  SuperviseOptions sup;
  sup.deadline = command.deadline;
  RunResult run = Supervise({child}, sup);
  const auto end = Clock::now();
  if (side.joinable()) side.join();
  CommandResult r;
  r.outcome = run.ranks[0];
  r.seconds = std::chrono::duration<double>(end - start).count();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fault_at) r.seconds_after_fault = std::chrono::duration<double>(end - *g_fault_at).count();
  return r;
}

}  // namespace ddp::launch::testing
