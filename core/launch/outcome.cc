// RankOutcome and RunResult: how a run ended, in words and exit codes.
#include <cstring>
#include <sstream>

#include "core/launch/supervise.h"

namespace ddp::launch {
namespace {

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

const RankOutcome* Find(const std::vector<RankOutcome>& ranks, int rank) {
  for (const auto& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

}  // namespace

std::string RankOutcome::Describe() const {
  std::string s;
  if (exited) {
    s = "exit " + std::to_string(exit_code);
  } else if (signal != 0) {
    s = "signal " + std::to_string(signal) + " (" + SignalName(signal) + ")";
  } else {
    s = "unknown status";
  }
  if (stopped) s += ", had been stopped by " + SignalName(stop_signal);
  if (timed_out) s += ", killed at the deadline";
  else if (killed) s += ", stopped by the launcher";
  if (!failure_report.empty()) {
    s += caused_by_peer ? "; failed because of a peer: " : "; failed: ";
    s += failure_report;
  }
  return s;
}

bool RunResult::all_ok() const {
  if (reason != StopReason::kAllExited) return false;
  for (const auto& r : ranks) {
    if (!r.ok()) return false;
  }
  return true;
}

int RunResult::ExitCode() const {
  if (reason == StopReason::kDeadline) return 124;
  if (const RankOutcome* r = Find(ranks, first_failed_rank)) {
    if (r->stopped) return 128 + r->stop_signal;
    if (r->exited) return r->exit_code;
    return 128 + r->signal;
  }
  if (reason == StopReason::kSignal) return 128 + forwarded_signal;
  for (const auto& r : ranks) {
    if (!r.ok()) return r.exited ? r.exit_code : 128 + r.signal;
  }
  return 0;
}

std::string RunResult::Culprit() const {
  const RankOutcome* r = Find(ranks, first_failed_rank);
  if (r == nullptr) return "";
  std::string s = "rank " + std::to_string(r->rank) + " (";
  if (r->stopped) {
    s += "stopped by " + SignalName(r->stop_signal) + " while its peers waited";
  } else if (r->exited) {
    s += "exit " + std::to_string(r->exit_code);
  } else {
    s += "signal " + std::to_string(r->signal) + " (" + SignalName(r->signal) + ")";
  }
  if (!r->failure_report.empty() && !r->stopped) s += ": " + r->failure_report;
  return s + ")";
}

std::string RunResult::Summary() const {
  std::ostringstream out;
  static const char* kReasons[] = {"all ranks exited", "overall deadline expired",
                                   "fail-fast after a rank failed", "forwarded a signal",
                                   "every rank left was stopped (a stall)"};
  out << kReasons[static_cast<int>(reason)] << " after " << elapsed.count() << " ms";
  if (reason == StopReason::kSignal) out << " (" << SignalName(forwarded_signal) << ")";
  if (first_failed_rank >= 0) out << "; first failure: " << Culprit();
  out << "\n";
  for (const auto& r : ranks) {
    out << "  rank " << r.rank << " (pid " << r.pid << "): " << r.Describe() << "\n";
    if (!r.ok() && !r.stderr_text.empty()) {
      // The tail is where the error is.
      const size_t keep = 2000;
      const std::string tail = r.stderr_text.size() > keep
                                   ? "..." + r.stderr_text.substr(r.stderr_text.size() - keep)
                                   : r.stderr_text;
      out << "    stderr: " << tail << (tail.ends_with('\n') ? "" : "\n");
    }
  }
  return out.str();
}

}  // namespace ddp::launch
