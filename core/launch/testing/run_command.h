// Runs a command as a child process (through StartChild, so it cannot
// outlive the test) and returns what happened to it, output included.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/launch/supervise.h"

namespace ddp::launch::testing {

struct Command {
  explicit Command(std::vector<std::string> a,
                   std::vector<std::pair<std::string, std::string>> e = {})
      : argv(std::move(a)), env(std::move(e)) {}

  std::vector<std::string> argv;  // argv[0] is a path
  std::vector<std::pair<std::string, std::string>> env;  // set in the child
  std::vector<std::string> unset_env;                    // removed in the child
  std::optional<long> file_limit;  // RLIMIT_NOFILE soft = hard = this, in the child
  std::optional<long> soft_file_limit;  // RLIMIT_NOFILE soft only
  // Runs on a thread while the command runs; gets its pid.
  std::function<void(pid_t)> while_running;
  std::chrono::milliseconds deadline{std::chrono::seconds(120)};
};

struct CommandResult {
  RankOutcome outcome;  // exit status, stdout_text, stderr_text
  double seconds = 0;   // wall time
  // Seconds from the moment while_running called MarkFault() to the end.
  std::optional<double> seconds_after_fault;
};

CommandResult RunCommand(const Command& command);

// Called from while_running right after injecting a fault.
void MarkFault();

// "$TEST_SRCDIR/ddp_pitfalls/<path>".
std::string Runfile(const std::string& path);

}  // namespace ddp::launch::testing
