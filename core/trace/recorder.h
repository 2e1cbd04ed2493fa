// FlightRecorder: one communicator's ring buffer of its last N collectives,
// in memory, written on the hot path and read by the watchdog thread.
//
// The hot path (Enter + Exit, once per collective) touches nothing but this
// object: a short uncontended lock, a slot overwrite (the allgatherv counts
// reuse the slot's storage) and two atomics that let the watchdog see the
// collective in flight without the lock. The caller passes the clock
// readings it takes anyway. No store, no file, no allocation once every slot
// has been used. bench/recorder measures it.
//
// The call site is a std::source_location: file, line and function are
// pointers to static strings, so recording it costs a copy of three words;
// they become text only when a dump is taken.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "core/collective/fingerprint.h"
#include "core/trace/model.h"

namespace ddp::trace {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  struct Identity {
    std::string name;  // the communicator's name, equal on every rank
    std::string backend;
    int rank = 0;
    int world_size = 1;
    std::chrono::milliseconds deadline{0};
    bool checked = false;
    // The first collective's bound (the communicator's start-up bound,
    // core/comm/options.h) when longer than `deadline`.
    std::chrono::milliseconds first_deadline{0};
  };

  // capacity >= 1.
  FlightRecorder(Identity identity, std::size_t capacity);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Hot path. `fp.seq` is the collective's sequence number; `counts` the
  // allgatherv counts (empty otherwise).
  void Enter(const comm::Fingerprint& fp, std::span<const std::size_t> counts,
             const std::source_location& site, Clock::time_point now);
  void Exit(int64_t seq, State state, Clock::time_point now);

  // The communicator finished normally / broke (after a failure).
  void MarkFinished() { comm_state_.store(kFinished, std::memory_order_relaxed); }
  void MarkBroken() { comm_state_.store(kBroken, std::memory_order_relaxed); }

  // The collective this communicator is inside now, read without the lock.
  struct InFlight {
    int64_t seq;
    Clock::time_point since;
  };
  std::optional<InFlight> in_flight() const;

  // A copy of the ring (oldest first), timestamps on the wall clock.
  CommTrace Snapshot() const;

  const Identity& identity() const { return identity_; }
  std::size_t capacity() const { return ring_.size(); }

 private:
  struct Slot {
    comm::Fingerprint fp;  // fp.seq == -1: never used
    std::vector<uint64_t> counts;
    std::source_location site;
    State state = State::kEntered;
    Clock::time_point enter, exit;
  };
  enum CommState : int { kActive, kFinished, kBroken };

  double UnixSeconds(Clock::time_point t) const;

  const Identity identity_;
  // Wall-clock anchor: entries store steady time, dumps print wall time.
  const Clock::time_point anchor_steady_;
  const double anchor_unix_s_;

  mutable std::mutex mu_;  // guards ring_ and next_seq_
  std::vector<Slot> ring_;
  int64_t next_seq_ = 0;

  std::atomic<int64_t> in_flight_seq_{-1};
  std::atomic<int64_t> in_flight_since_ns_{0};
  std::atomic<int> comm_state_{kActive};
};

}  // namespace ddp::trace
