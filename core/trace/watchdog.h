// The watchdog: one thread per process that writes this rank's flight
// recorder dump (every communicator of the process, one file
// <trace dir>/rank<R>.json) when
//   - a communicator fails (its thread calls OnFailure: deadline, peer
//     failure), which also asks every rank to dump, through the store, and
//     analyses what arrives within the wait;
//   - another rank asks (a new request id in the store, polled every 50 ms);
//   - the process gets SIGUSR1;
//   - a collective stays in flight past its deadline + 1 s, i.e. the main
//     thread is stuck inside the engine and cannot report: then the watchdog
//     itself asks every rank, prints the analysis to stderr, and runs the
//     communicator's abort hook (NCCL: ncclCommAbort).
// None of this touches the hot path: the thread reads the recorders' atomics
// and snapshots them under their lock only when it dumps.
//
// The thread starts with the first registered communicator of the process
// and stops (joined) with the last; a forked child starts its own.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/trace/exchange.h"
#include "core/trace/model.h"
#include "core/trace/recorder.h"

namespace ddp::trace {

// A rank's dump from its communicators' flight recorders: `primary` first
// (it may be null), then `others` (any entry equal to `primary` skipped).
// The dump's rank, world size and run id are the first communicator's. A
// dump published through a communicator's channel lands under that
// communicator's rank, so it must say that rank, whatever else the process
// holds and even when the communicator has just been unregistered: a
// watchdog thread answering a request while its main thread destroyed the
// communicator once built its dump from no communicators at all, which then
// said rank 0 under rank 1's key (the flaky netns failure "dump of rank 1
// says rank 0").
RankDump ComposeDump(const std::string& reason, const std::string& request,
                     const FlightRecorder* primary, const std::string& primary_run_id,
                     const std::vector<std::pair<const FlightRecorder*, std::string>>& others);

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  struct Registration {
    std::shared_ptr<FlightRecorder> recorder;
    std::shared_ptr<DumpChannel> channel;  // null: files only
    std::string trace_dir;                 // where rank<R>.json goes
    std::string run_id;
  };

  // What a failing communicator reports.
  struct Report {
    std::string verdict;  // the analyzer's one line
    std::string klass;    // its mismatch class ("" when the dumps agree)
    std::vector<int> culprits;  // the ranks the verdict blames
    std::string text;     // the whole desync report block
    std::string dump_path;  // this rank's dump file ("" if it could not be written)
  };

  // This process's watchdog (a fresh one in a forked child).
  static Watchdog& Get();

  int Register(Registration registration);
  void Unregister(int id);
  // NCCL: what to run when the main thread is stuck past the deadline.
  void SetAbortHook(int id, std::function<void()> hook);
  // Waits for a running hook to finish; the hook is not run afterwards.
  void ClearAbortHook(int id);

  // Called by communicator `id`'s own thread when a collective failed:
  // dumps this rank, asks every rank through the store, waits up to `wait`
  // for their dumps and analyses them.
  Report OnFailure(int id, const std::string& reason, std::chrono::milliseconds wait);

  // Communicator `id` is being destroyed normally: leaves this rank's last
  // dump in the store for ranks that fail later (best effort, never throws).
  void PublishLast(int id);

  // Writes this rank's dump now; returns its path, or "" when no
  // communicator is registered. Throws DumpError.
  std::string DumpNow(const std::string& reason, const std::string& request = "");

  // How long a collective may stay in flight past its deadline before the
  // watchdog decides the main thread is stuck.
  static constexpr std::chrono::milliseconds kStuckGrace{1000};
  static constexpr std::chrono::milliseconds kTick{50};

 private:
  struct Entry {
    int id = 0;
    Registration reg;
    std::string answered;        // last request id this rank answered (guarded by mu_)
    int64_t stuck_handled = -1;  // watchdog thread only
    std::function<void()> abort_hook;  // guarded by hook_mu_
  };

  Watchdog() = default;
  void Start();
  void Stop();
  void Loop();
  void Tick();
  void Answer(const std::shared_ptr<Entry>& e, const std::string& request);
  void HandleStuck(const std::shared_ptr<Entry>& e, const FlightRecorder::InFlight& f);
  // This rank's dump: `primary`'s communicator, then every other one still
  // registered (ComposeDump). Without a primary (SIGUSR1): the registered
  // ones, the first registered communicator's rank.
  RankDump BuildDump(const std::string& reason, const std::string& request,
                     const Entry* primary = nullptr);
  std::shared_ptr<Entry> Find(int id);
  std::vector<std::shared_ptr<Entry>> Entries();
  std::string Prefix();

  std::mutex lifecycle_mu_;  // Register/Unregister: start and stop
  std::mutex mu_;            // entries_, answered
  std::vector<std::shared_ptr<Entry>> entries_;
  int next_id_ = 0;
  std::mutex dump_mu_;  // one dump at a time
  std::mutex hook_mu_;
  std::thread thread_;
  bool running_ = false;
  bool stop_ = false;  // guarded by mu_
  int wake_read_ = -1;
  int wake_write_ = -1;
};

}  // namespace ddp::trace
