// Running W rank processes to completion under one deadline.
//
// The supervisor owns the children it is given: it collects their output
// (optionally echoing each line as "[rank k] ..."), reaps them, enforces the
// overall deadline, optionally kills everyone when one rank fails (fail-fast,
// as torchrun does) and stops the ranks on SIGINT/SIGTERM/SIGHUP. When it
// returns, every child, every process a child started in its process group,
// and every process re-parented to this one (this process is a child
// subreaper) has been killed and reaped: no orphans, no zombies — even a
// process that left its group with setsid. The deadline holds to the end:
// after the ranks exit, a stray process holding their output open gets at
// most one more second.
//
// Stalls: a rank stopped by a signal (SIGSTOP, SIGTSTP) is noticed; once
// every rank still alive is stopped and some rank has ended, nobody can make
// progress, and after a short grace (250 ms at most) the stopped ranks are
// killed (kStall).
//
// Blame: when ranks fail together, first_failed_rank is the root cause, not
// the first rank reaped (see failure_report.h): the first rank whose failure
// was its own, else a rank found stopped while its peers waited, else the
// first rank seen to end (its output closed while it exited, or it was
// reaped): a rank that closed or redirected its own output has not ended.
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
  bool killed = false;      // ended by the supervisor (deadline, fail-fast, stall, signal)
  bool stopped = false;     // was stopped (stop_signal) when the supervisor ended it
  int stop_signal = 0;
  bool caused_by_peer = false;   // its failure report blames a peer
  std::string failure_report;    // the rank's own one-line account, if it wrote one
  std::chrono::milliseconds ended_at{-1};  // seen to end (output closed or reaped), since start
  std::string stdout_text;  // captured output (when capturing)
  std::string stderr_text;

  bool ok() const { return exited && exit_code == 0; }
  // "exit 0", "exit 3", "signal 6 (SIGABRT)", "killed at the deadline", ...
  std::string Describe() const;
};

enum class StopReason { kAllExited, kDeadline, kFailFast, kSignal, kStall };

struct RunResult {
  std::vector<RankOutcome> ranks;
  StopReason reason = StopReason::kAllExited;
  int first_failed_rank = -1;  // the root cause (see the file comment); -1 if none
  int forwarded_signal = 0;
  std::chrono::milliseconds elapsed{0};

  bool timed_out() const { return reason == StopReason::kDeadline; }
  bool all_ok() const;
  // The launcher's exit code: 0 when all ranks exited 0; 124 on the deadline;
  // else the root cause's code (128 + signal for a signal, 128 + the stop
  // signal for a rank that was stopped); 128 + signal when interrupted.
  int ExitCode() const;
  // "rank 1 (exit 3)", "rank 2 (stopped by SIGSTOP while its peers waited)",
  // or "" when no rank failed.
  std::string Culprit() const;
  // One line per rank, for logs and test failure messages.
  std::string Summary() const;
};

struct SuperviseOptions {
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};
  bool fail_fast = false;
  bool echo = false;     // write "[rank k] line" to this process's stdout/stderr
  bool capture = true;   // keep each rank's output in its RankOutcome
  // Stop the ranks on SIGINT/SIGTERM/SIGHUP (interrupt.h) and report
  // kSignal; the handlers stay installed afterwards.
  bool forward_signals = false;
  // After SIGTERM (fail-fast, deadline, forwarded signal), how long ranks get
  // before SIGKILL.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(2)};
};

// Forks one rank: the child gets its own process group, dies with its parent
// (PR_SET_PDEATHSIG), writes stdout/stderr into pipes, closes the
// supervisor's descriptors (other ranks' pipes), runs `body` and exits with
// its return value. A body that throws exits 1 (ConfigError: 2) after
// printing the message. Its process group is registered with the guardian
// (guardian.h). Throws ConfigError naming the limit when pipes or processes
// run out.
struct ChildProcess {
  int rank = -1;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string failure_file;  // where the rank may write its failure report
};
ChildProcess StartChild(int rank, const std::function<int()>& body);

// A child of this process that is not a rank and must outlive Supervise
// calls (the CUDA MPS daemon, mps.h): never killed as an adopted orphan.
// Forget it once it has been reaped.
void RegisterService(pid_t pid);
void ForgetService(pid_t pid);

// Runs the children to completion; see the file comment.
RunResult Supervise(std::vector<ChildProcess> children, const SuperviseOptions& options);

}  // namespace ddp::launch
