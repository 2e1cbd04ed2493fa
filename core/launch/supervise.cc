#include "core/launch/supervise.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "core/launch/children.h"
#include "core/launch/failure_report.h"
#include "core/launch/guardian.h"
#include "core/launch/interrupt.h"

namespace ddp::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After every rank has exited, how long a process that still holds their
// output open (a grandchild that escaped every kill) may keep the run going.
constexpr milliseconds kDrainLimit{1000};
// Fail-fast after a rank that failed because of a peer: how long the peer
// that caused it gets to finish dying on its own (it closes its sockets in
// its exit path, before it exits), so that it is reported with its own exit
// status rather than as killed by us.
constexpr milliseconds kPeerSettle{500};
// A stall (every rank left is stopped, and some rank has ended) is ended
// after this long, capped by kill_grace: the run's outcome is known by then.
constexpr milliseconds kStallGrace{250};

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// One output stream of one rank.
struct Stream {
  int fd = -1;
  int echo_fd = -1;  // 1 or 2
  size_t child = 0;  // index into the children
  std::string pending;  // incomplete echoed line
  std::string* capture = nullptr;
};

// What the supervisor knows about one child while it runs.
struct Live {
  bool running = true;
  int open_streams = 0;
  // Both streams at EOF while the process was exiting: the most precise
  // time it ended (a rank closes its sockets and output in its exit path,
  // before it can be reaped). Not set when the output closed while the
  // process lived on (it closed or redirected its own output): that says
  // nothing about when, or why, it ended.
  std::optional<Clock::time_point> output_closed;
  std::optional<Clock::time_point> reaped;
  std::optional<Clock::time_point> stopped_since;   // currently stopped
  int stop_signal = 0;
};

class Runner {
 public:
  Runner(std::vector<ChildProcess> children, const SuperviseOptions& options)
      : children_(std::move(children)), options_(options), live_(children_.size()) {
    result_.ranks.resize(children_.size());
    for (size_t i = 0; i < children_.size(); ++i) {
      RankOutcome& o = result_.ranks[i];
      o.rank = children_[i].rank;
      o.pid = children_[i].pid;
      AddStream(children_[i].out_fd, 1, &o.stdout_text, i);
      AddStream(children_[i].err_fd, 2, &o.stderr_text, i);
    }
  }

  RunResult Run() {
    start_ = Clock::now();
    const auto deadline = start_ + options_.deadline;
    if (options_.forward_signals) InstallInterruptHandlers();
    std::optional<Clock::time_point> drain_since, stall_since;
    while (AnyRunning() || AnyStreamOpen()) {
      const auto now = Clock::now();
      if (AnyRunning()) {
        if (!stopping_ && now >= deadline) {
          result_.reason = StopReason::kDeadline;
          for (size_t i = 0; i < live_.size(); ++i) {
            if (live_[i].running) result_.ranks[i].timed_out = true;
          }
          BeginStop(SIGTERM);
        }
        // A stall: everyone left is stopped and someone has ended, so
        // nobody will ever wake them.
        if (!stopping_ && AllAliveStopped() && AnyEnded()) {
          // emplace's reference, not *stall_since: GCC 12 at -O2 warns that
          // the optional's value may be read uninitialized (a false positive).
          const Clock::time_point since = stall_since ? *stall_since : stall_since.emplace(now);
          if (now - since >= std::min(kStallGrace, options_.kill_grace)) {
            result_.reason = StopReason::kStall;
            BeginStop(SIGKILL);
          }
        } else {
          stall_since.reset();
        }
        if (!stopping_ && fail_fast_at_ && now >= *fail_fast_at_) {
          result_.reason = StopReason::kFailFast;
          BeginStop(SIGTERM);
        }
        if (kill_at_ && now >= *kill_at_) {
          KillAll(SIGKILL);
          kill_at_.reset();
        }
      } else {
        // Every rank has exited; something they started still holds their
        // output open. Kill what can be found, and stop listening soon.
        if (!drain_since) drain_since = now;
        KillAll(SIGKILL);
        KillAdopted();
        if (now - *drain_since >= kDrainLimit || now >= deadline + options_.kill_grace) break;
      }
      PollOnce(milliseconds(10));
      Reap();
    }
    KillAll(SIGKILL);  // stray processes left in the ranks' groups
    KillAdopted();
    ReapGroups();
    for (auto& s : streams_) {
      FlushPending(s);
      CloseOwnedFd(s.fd);
      s.fd = -1;
    }
    for (const auto& c : children_) ReleaseGroup(c.pid);
    Finish();
    return std::move(result_);
  }

 private:
  void AddStream(int fd, int echo_fd, std::string* capture, size_t child) {
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    Stream s;
    s.fd = fd;
    s.echo_fd = echo_fd;
    s.child = child;
    s.capture = options_.capture ? capture : nullptr;
    streams_.push_back(s);
    ++live_[child].open_streams;
  }

  bool AnyRunning() const {
    for (const auto& l : live_) {
      if (l.running) return true;
    }
    return false;
  }
  bool AnyStreamOpen() const {
    for (const auto& s : streams_) {
      if (s.fd >= 0) return true;
    }
    return false;
  }
  bool AllAliveStopped() const {
    bool any = false;
    for (const auto& l : live_) {
      if (!l.running) continue;
      if (!l.stopped_since) return false;
      any = true;
    }
    return any;
  }
  bool AnyEnded() const {
    for (const auto& l : live_) {
      if (!l.running) return true;
    }
    return false;
  }

  // SIGTERM (or the forwarded signal) now, SIGKILL after the grace period.
  void BeginStop(int sig) {
    stopping_ = true;
    stop_at_ = Clock::now();
    for (size_t i = 0; i < live_.size(); ++i) {
      if (!live_[i].running) continue;
      if (live_[i].stopped_since) {
        result_.ranks[i].stopped = true;
        result_.ranks[i].stop_signal = live_[i].stop_signal;
      }
    }
    KillAll(sig);
    KillAll(SIGCONT);  // a stopped rank acts on SIGTERM only once continued
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

  // Processes re-parented to us: what ranks started and left behind,
  // including those that left the ranks' groups (setsid).
  void KillAdopted() {
    for (pid_t pid : AdoptedChildren()) {
      ::kill(pid, SIGKILL);
      adopted_.push_back(pid);
    }
  }

  void PollOnce(milliseconds wait) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].fd >= 0) {
        fds.push_back({streams_[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    }
    const bool watch_signals = options_.forward_signals && InterruptFd() >= 0 && !stopping_;
    if (watch_signals) fds.push_back({InterruptFd(), POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (n > 0) {
      for (size_t k = 0; k < which.size(); ++k) {
        if (fds[k].revents != 0) Drain(streams_[which[k]]);
      }
    }
    if (watch_signals && InterruptSignal() != 0) {
      result_.forwarded_signal = InterruptSignal();
      result_.reason = StopReason::kSignal;
      BeginStop(InterruptSignal());
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
      CloseOwnedFd(s.fd);  // EOF or error
      s.fd = -1;
      FlushPending(s);
      Live& l = live_[s.child];
      if (--l.open_streams == 0 && IsExiting(children_[s.child].pid)) {
        l.output_closed = Clock::now();
      }
      return;
    }
  }

  void Echo(Stream& s, std::string_view data) {
    s.pending.append(data);
    size_t start = 0;
    std::string out;
    const std::string tag = "[rank " + std::to_string(children_[s.child].rank) + "] ";
    for (size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      out += tag;
      out.append(s.pending, start, nl + 1 - start);
    }
    s.pending.erase(0, start);
    WriteAll(s.echo_fd, out);
  }

  void FlushPending(Stream& s) {
    if (!options_.echo || s.pending.empty()) return;
    WriteAll(s.echo_fd,
             "[rank " + std::to_string(children_[s.child].rank) + "] " + s.pending + "\n");
    s.pending.clear();
  }

  void Reap() {
    for (size_t i = 0; i < children_.size(); ++i) {
      Live& l = live_[i];
      if (!l.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(children_[i].pid, &status, WNOHANG | WUNTRACED | WCONTINUED);
      if (r == 0) continue;
      if (r > 0 && WIFSTOPPED(status)) {
        if (!l.stopped_since) l.stopped_since = Clock::now();
        l.stop_signal = WSTOPSIG(status);
        continue;
      }
      if (r > 0 && WIFCONTINUED(status)) {
        l.stopped_since.reset();
        continue;
      }
      l.running = false;
      l.reaped = Clock::now();
      ForgetForked(children_[i].pid);
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
      // Ended by us only if it was still going when we started stopping.
      const auto ended = EndedAt(l);
      o.killed = stop_at_ && ended >= *stop_at_;
      if (!o.ok() && !o.killed && options_.fail_fast && !stopping_) {
        // Stop everyone now, or shortly when this rank says a peer caused
        // its failure (the peer is probably still dying).
        const auto report = children_[i].failure_file.empty()
                                ? std::nullopt
                                : ReadFailureReport(children_[i].failure_file);
        const auto settle = std::min(kPeerSettle, options_.kill_grace);
        const auto when = report && report->caused_by_peer ? Clock::now() + settle : Clock::now();
        if (!fail_fast_at_ || when < *fail_fast_at_) fail_fast_at_ = when;
      }
    }
  }

  static Clock::time_point EndedAt(const Live& l) {
    if (l.output_closed && (!l.reaped || *l.output_closed < *l.reaped)) return *l.output_closed;
    return l.reaped ? *l.reaped : Clock::now();
  }

  // Reaps what the kills above left as zombies: the ranks' groups and the
  // adopted processes. Bounded: a process in uninterruptible sleep cannot
  // hold the launcher forever.
  void ReapGroups() {
    const auto limit = Clock::now() + std::chrono::seconds(5);
    for (const auto& c : children_) {
      while (true) {
        int status = 0;
        const pid_t r = ::waitpid(-c.pid, &status, WNOHANG);
        if (r > 0) continue;                 // reaped one; look for more
        if (r < 0) break;                    // ECHILD: none left in this group
        if (Clock::now() > limit) break;     // still dying; give up waiting
        std::this_thread::sleep_for(milliseconds(2));
      }
    }
    for (pid_t pid : adopted_) {
      while (::waitpid(pid, nullptr, WNOHANG) == 0 && Clock::now() < limit) {
        std::this_thread::sleep_for(milliseconds(2));
      }
    }
  }

  // Outcomes that need the whole run: end times, failure reports, blame.
  void Finish() {
    const auto now = Clock::now();
    result_.elapsed = std::chrono::duration_cast<milliseconds>(now - start_);
    for (size_t i = 0; i < children_.size(); ++i) {
      RankOutcome& o = result_.ranks[i];
      o.ended_at = std::chrono::duration_cast<milliseconds>(EndedAt(live_[i]) - start_);
      if (children_[i].failure_file.empty()) continue;
      if (const auto report = ReadFailureReport(children_[i].failure_file)) {
        o.caused_by_peer = report->caused_by_peer;
        o.failure_report = report->what;
      }
    }
    result_.first_failed_rank = Blame();
  }

  // The root cause, in order of confidence: (1) a failed rank that said its
  // failure was its own, or said nothing and ended before we stopped
  // anyone; (2) a rank found stopped while its peers waited; (3) a failed
  // rank that did not blame a peer; (4) any failed rank we did not stop.
  // Earliest first; none when every failed rank was stopped by us.
  int Blame() const {
    const auto earliest = [this](auto&& pick) {
      int best = -1;
      for (size_t i = 0; i < result_.ranks.size(); ++i) {
        const RankOutcome& o = result_.ranks[i];
        if (!pick(o)) continue;
        if (best < 0 || o.ended_at < result_.ranks[best].ended_at) best = static_cast<int>(i);
      }
      return best;
    };
    const auto failed = [](const RankOutcome& o) { return !o.ok() && !o.timed_out; };
    int i = earliest([&](const RankOutcome& o) {
      return failed(o) && !o.stopped &&
             (o.failure_report.empty() ? !o.killed : !o.caused_by_peer);
    });
    if (i < 0) i = earliest([](const RankOutcome& o) { return o.stopped; });
    // A rank this launcher stopped (fail-fast) is no cause, even without a
    // report: on several hosts every local rank may have failed because of
    // a remote one, and the first of them to fail says more.
    if (i < 0) {
      i = earliest([&](const RankOutcome& o) { return failed(o) && !o.caused_by_peer && !o.killed; });
    }
    // Else a failed rank that blamed a peer but ended by itself. Never a
    // rank this launcher stopped (a signal to the launcher, the deadline):
    // after `kill -TERM ddprun` no rank failed by its own doing, and naming
    // one "first failure" would be false.
    if (i < 0) i = earliest([&](const RankOutcome& o) { return failed(o) && !o.killed; });
    return i < 0 ? -1 : result_.ranks[i].rank;
  }

  std::vector<ChildProcess> children_;
  SuperviseOptions options_;
  RunResult result_;
  std::vector<Live> live_;
  std::vector<Stream> streams_;
  std::vector<pid_t> adopted_;
  Clock::time_point start_;
  bool stopping_ = false;
  std::optional<Clock::time_point> fail_fast_at_;  // when fail-fast stops everyone
  std::optional<Clock::time_point> stop_at_;
  std::optional<Clock::time_point> kill_at_;  // when SIGKILL follows SIGTERM
};

}  // namespace

RunResult Supervise(std::vector<ChildProcess> children, const SuperviseOptions& options) {
  Runner runner(std::move(children), options);
  return runner.Run();
}

}  // namespace ddp::launch
