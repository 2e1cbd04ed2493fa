// Running W rank processes to completion under one deadline.
//
// The supervisor owns the children it is given: it collects their output
// (optionally echoing each line as "[rank k] ..."), reaps them, enforces the
// overall deadline, optionally kills everyone when one rank fails (fail-fast,
// as torchrun does) and forwards SIGINT/SIGTERM. When it returns, every
// child and every process a child started in its process group has been
// killed and reaped: no orphans, no zombies.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ddp::launch {

struct RankOutcome {
  int rank = -1;
  pid_t pid = -1;
  bool exited = false;      // exited on its own with exit_code
  int exit_code = -1;
  int signal = 0;           // the signal that ended it, if any
  bool timed_out = false;   // still running at the deadline (then killed)
  bool killed = false;      // ended by the supervisor (deadline, fail-fast, forwarded signal)
  std::string stdout_text;  // captured output (when capturing)
  std::string stderr_text;

  bool ok() const { return exited && exit_code == 0; }
  // "exit 0", "exit 3", "signal 6 (SIGABRT)", "killed at the deadline", ...
  std::string Describe() const;
};

enum class StopReason { kAllExited, kDeadline, kFailFast, kSignal };

struct RunResult {
  std::vector<RankOutcome> ranks;
  StopReason reason = StopReason::kAllExited;
  int first_failed_rank = -1;  // first rank seen failing on its own; -1 if none
  int forwarded_signal = 0;
  std::chrono::milliseconds elapsed{0};

  bool timed_out() const { return reason == StopReason::kDeadline; }
  bool all_ok() const;
  // The launcher's exit code: 0 when all ranks exited 0; 124 on the deadline;
  // else the first failing rank's code (128 + signal for a signal).
  int ExitCode() const;
  // One line per rank, for logs and test failure messages.
  std::string Summary() const;
};

struct SuperviseOptions {
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};
  bool fail_fast = false;
  bool echo = false;     // write "[rank k] line" to this process's stdout/stderr
  bool capture = true;   // keep each rank's output in its RankOutcome
  bool forward_signals = false;
  // After SIGTERM (fail-fast, deadline, forwarded signal), how long ranks get
  // before SIGKILL.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(2)};
};

// Forks one rank: the child gets its own process group, dies with its parent
// (PR_SET_PDEATHSIG), writes stdout/stderr into pipes, runs `body` and exits
// with its return value. A body that throws exits 1 (ConfigError: 2) after
// printing the message.
struct ChildProcess {
  int rank = -1;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};
ChildProcess StartChild(int rank, const std::function<int()>& body);

// Runs the children to completion; see the file comment.
RunResult Supervise(std::vector<ChildProcess> children, const SuperviseOptions& options);

}  // namespace ddp::launch
