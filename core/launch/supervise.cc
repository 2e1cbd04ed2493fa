#include "core/launch/supervise.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/launch/config_error.h"

namespace ddp::launch {
namespace {

using Clock = std::chrono::steady_clock;

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Self-pipe for forwarded signals: the handler only writes the signal number.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

// One output stream of one rank.
struct Stream {
  int fd = -1;
  int echo_fd = -1;  // 1 or 2
  int rank = -1;
  std::string pending;  // incomplete echoed line
  std::string* capture = nullptr;
};

class Runner {
 public:
  Runner(std::vector<ChildProcess> children, const SuperviseOptions& options)
      : children_(std::move(children)), options_(options) {
    result_.ranks.resize(children_.size());
    running_.assign(children_.size(), true);
    for (size_t i = 0; i < children_.size(); ++i) {
      RankOutcome& o = result_.ranks[i];
      o.rank = children_[i].rank;
      o.pid = children_[i].pid;
      AddStream(children_[i].out_fd, 1, &o.stdout_text, o.rank);
      AddStream(children_[i].err_fd, 2, &o.stderr_text, o.rank);
    }
  }

  RunResult Run() {
    const auto start = Clock::now();
    const auto deadline = start + options_.deadline;
    if (options_.forward_signals) InstallSignalHandlers();
    while (AnyRunning() || AnyStreamOpen()) {
      const auto now = Clock::now();
      if (AnyRunning()) {
        if (!stopping_ && now >= deadline) {
          result_.reason = StopReason::kDeadline;
          for (size_t i = 0; i < running_.size(); ++i) {
            if (running_[i]) result_.ranks[i].timed_out = true;
          }
          BeginStop(SIGTERM);
        }
        if (kill_at_ && now >= *kill_at_) {
          KillAll(SIGKILL);
          kill_at_.reset();
        }
      } else if (AnyStreamOpen()) {
        // Every rank has exited; a grandchild may still hold a pipe open.
        KillAll(SIGKILL);
      }
      PollOnce(std::chrono::milliseconds(10));
      Reap();
    }
    KillAll(SIGKILL);  // stray processes left in the ranks' groups
    ReapGroups();
    if (options_.forward_signals) RestoreSignalHandlers();
    for (auto& s : streams_) FlushPending(s);
    result_.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return std::move(result_);
  }

 private:
  void AddStream(int fd, int echo_fd, std::string* capture, int rank) {
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    Stream s;
    s.fd = fd;
    s.echo_fd = echo_fd;
    s.rank = rank;
    s.capture = options_.capture ? capture : nullptr;
    streams_.push_back(s);
  }

  bool AnyRunning() const {
    for (bool r : running_) {
      if (r) return true;
    }
    return false;
  }
  bool AnyStreamOpen() const {
    for (const auto& s : streams_) {
      if (s.fd >= 0) return true;
    }
    return false;
  }

  // SIGTERM (or the forwarded signal) now, SIGKILL after the grace period.
  void BeginStop(int sig) {
    stopping_ = true;
    for (size_t i = 0; i < running_.size(); ++i) {
      if (running_[i]) result_.ranks[i].killed = true;
    }
    KillAll(sig);
    kill_at_ = Clock::now() + options_.kill_grace;
  }

  void KillAll(int sig) {
    for (const auto& c : children_) {
      // The whole process group: the rank and anything it started. A group
      // id stays reserved while any member lives, so this cannot hit an
      // unrelated process.
      ::kill(-c.pid, sig);
    }
  }

  void PollOnce(std::chrono::milliseconds wait) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].fd >= 0) {
        fds.push_back({streams_[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    }
    if (options_.forward_signals) fds.push_back({g_signal_pipe[0], POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (n <= 0) return;
    for (size_t k = 0; k < which.size(); ++k) {
      if (fds[k].revents != 0) Drain(streams_[which[k]]);
    }
    if (options_.forward_signals && fds.back().revents != 0) {
      unsigned char b = 0;
      while (::read(g_signal_pipe[0], &b, 1) == 1) {
        result_.forwarded_signal = b;
        if (!stopping_) {
          result_.reason = StopReason::kSignal;
          BeginStop(b);
        }
      }
    }
  }

  void Drain(Stream& s) {
    char buf[65536];
    while (true) {
      const ssize_t n = ::read(s.fd, buf, sizeof(buf));
      if (n > 0) {
        if (s.capture != nullptr) s.capture->append(buf, static_cast<size_t>(n));
        if (options_.echo) Echo(s, std::string_view(buf, static_cast<size_t>(n)));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      ::close(s.fd);  // EOF or error
      s.fd = -1;
      FlushPending(s);
      return;
    }
  }

  void Echo(Stream& s, std::string_view data) {
    s.pending.append(data);
    size_t start = 0;
    std::string out;
    for (size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      out += "[rank " + std::to_string(s.rank) + "] ";
      out.append(s.pending, start, nl + 1 - start);
    }
    s.pending.erase(0, start);
    WriteAll(s.echo_fd, out);
  }

  void FlushPending(Stream& s) {
    if (!options_.echo || s.pending.empty()) return;
    WriteAll(s.echo_fd, "[rank " + std::to_string(s.rank) + "] " + s.pending + "\n");
    s.pending.clear();
  }

  void Reap() {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!running_[i]) continue;
      int status = 0;
      const pid_t r = ::waitpid(children_[i].pid, &status, WNOHANG);
      if (r == 0) continue;
      running_[i] = false;
      RankOutcome& o = result_.ranks[i];
      if (r < 0) {
        o.exit_code = -1;  // not our child any more: should not happen
        continue;
      }
      if (WIFEXITED(status)) {
        o.exited = true;
        o.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        o.signal = WTERMSIG(status);
      }
      const bool failed = !o.ok();
      if (failed && !o.killed && result_.first_failed_rank < 0) {
        result_.first_failed_rank = o.rank;
        if (options_.fail_fast && !stopping_) {
          result_.reason = StopReason::kFailFast;
          BeginStop(SIGTERM);
        }
      }
    }
  }

  // Processes a rank started and left behind were re-parented to us (we are
  // a child subreaper, see StartChild) and SIGKILLed above: reap them, so
  // none lingers as a zombie. Bounded: a process in uninterruptible sleep
  // cannot hold the launcher forever.
  void ReapGroups() {
    const auto limit = Clock::now() + std::chrono::seconds(5);
    for (const auto& c : children_) {
      while (true) {
        int status = 0;
        const pid_t r = ::waitpid(-c.pid, &status, WNOHANG);
        if (r > 0) continue;                 // reaped one; look for more
        if (r < 0) break;                    // ECHILD: none left in this group
        if (Clock::now() > limit) break;     // still dying; give up waiting
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }

  void InstallSignalHandlers() {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }

  void RestoreSignalHandlers() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }

  std::vector<ChildProcess> children_;
  SuperviseOptions options_;
  RunResult result_;
  std::vector<bool> running_;
  std::vector<Stream> streams_;
  bool stopping_ = false;
  std::optional<Clock::time_point> kill_at_;  // when SIGKILL follows SIGTERM
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

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
  if (timed_out) s += ", killed at the deadline";
  else if (killed) s += ", stopped by the launcher";
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
  if (first_failed_rank >= 0) {
    for (const auto& r : ranks) {
      if (r.rank != first_failed_rank) continue;
      if (r.exited) return r.exit_code;
      return 128 + r.signal;
    }
  }
  if (reason == StopReason::kSignal) return 128 + forwarded_signal;
  for (const auto& r : ranks) {
    if (!r.ok()) return r.exited ? r.exit_code : 128 + r.signal;
  }
  return 0;
}

std::string RunResult::Summary() const {
  std::ostringstream out;
  static const char* kReasons[] = {"all ranks exited", "overall deadline expired",
                                   "fail-fast after a rank failed", "forwarded a signal"};
  out << kReasons[static_cast<int>(reason)] << " after " << elapsed.count() << " ms";
  if (first_failed_rank >= 0) out << "; first failure: rank " << first_failed_rank;
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

ChildProcess StartChild(int rank, const std::function<int()>& body) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error("pipe2 failed");
  }
  std::fflush(nullptr);  // no buffered parent output duplicated in the child
  // Orphans of our ranks come to us rather than to init (which, in a
  // container, may never reap them), so Supervise can reap them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // the parent died before prctl
    // Default dispositions and an empty mask: the parent may block or catch
    // signals, and an exec'd rank must see SIGTERM as a terminate request.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    int code = 1;
    try {
      code = body();
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
      code = kExitUsage;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: uncaught exception: %s\n", rank, e.what());
      code = 1;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    // _exit: the parent's atexit handlers and static destructors (gtest,
    // gloo devices shared before fork) must not run in the child.
    ::_exit(code);
  }
  ::setpgid(pid, pid);  // also here, so kill(-pid) works even before the child runs
  ::close(out[1]);
  ::close(err[1]);
  return ChildProcess{rank, pid, out[0], err[0]};
}

RunResult Supervise(std::vector<ChildProcess> children, const SuperviseOptions& options) {
  Runner runner(std::move(children), options);
  return runner.Run();
}

}  // namespace ddp::launch
