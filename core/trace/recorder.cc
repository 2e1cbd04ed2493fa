#include "core/trace/recorder.h"

#include <algorithm>

namespace ddp::trace {
namespace {

double ToUnix(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

FlightRecorder::FlightRecorder(Identity identity, std::size_t capacity)
    : identity_(std::move(identity)),
      anchor_steady_(Clock::now()),
      anchor_unix_s_(ToUnix(std::chrono::system_clock::now())),
      ring_(std::max<std::size_t>(capacity, 1)) {
  for (Slot& s : ring_) s.fp.seq = -1;
}

void FlightRecorder::Enter(const comm::Fingerprint& fp, std::span<const std::size_t> counts,
                           const std::source_location& site, Clock::time_point now) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = ring_[static_cast<std::size_t>(fp.seq) % ring_.size()];
    s.fp = fp;
    s.counts.assign(counts.begin(), counts.end());
    s.site = site;
    s.state = State::kEntered;
    s.enter = now;
    next_seq_ = fp.seq + 1;
  }
  in_flight_since_ns_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  in_flight_seq_.store(fp.seq, std::memory_order_release);
}

void FlightRecorder::Exit(int64_t seq, State state, Clock::time_point now) {
  in_flight_seq_.store(-1, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = ring_[static_cast<std::size_t>(seq) % ring_.size()];
  if (s.fp.seq != seq) return;
  s.state = state;
  s.exit = now;
}

std::optional<FlightRecorder::InFlight> FlightRecorder::in_flight() const {
  const int64_t seq = in_flight_seq_.load(std::memory_order_acquire);
  if (seq < 0) return std::nullopt;
  const int64_t since = in_flight_since_ns_.load(std::memory_order_relaxed);
  // The main thread may have moved on meanwhile: then seq and since do not
  // belong together, and the next look will tell.
  if (in_flight_seq_.load(std::memory_order_acquire) != seq) return std::nullopt;
  return InFlight{seq, Clock::time_point(Clock::duration(since))};
}

double FlightRecorder::UnixSeconds(Clock::time_point t) const {
  return anchor_unix_s_ + std::chrono::duration<double>(t - anchor_steady_).count();
}

CommTrace FlightRecorder::Snapshot() const {
  std::vector<Slot> slots;
  int64_t next = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next = next_seq_;
    const int64_t cap = static_cast<int64_t>(ring_.size());
    for (int64_t seq = std::max<int64_t>(0, next - cap); seq < next; ++seq) {
      const Slot& s = ring_[static_cast<std::size_t>(seq % cap)];
      if (s.fp.seq == seq) slots.push_back(s);
    }
  }
  CommTrace t;
  t.name = identity_.name;
  t.backend = identity_.backend;
  t.rank = identity_.rank;
  t.world_size = identity_.world_size;
  t.deadline_s = std::chrono::duration<double>(identity_.deadline).count();
  t.checked = identity_.checked;
  switch (comm_state_.load(std::memory_order_relaxed)) {
    case kFinished: t.state = "finished"; break;
    case kBroken: t.state = "broken"; break;
    default: t.state = "active"; break;
  }
  t.next_seq = next;
  t.capacity = static_cast<int64_t>(ring_.size());
  for (const Slot& s : slots) {
    TraceEntry e;
    e.seq = s.fp.seq;
    e.op = s.fp.op;
    e.dtype = s.fp.dtype;
    e.count = s.fp.count;
    e.counts = s.counts;
    e.root = static_cast<int>(s.fp.root);
    e.reduce = static_cast<int>(s.fp.reduce);
    e.state = s.state;
    e.enter_unix_s = UnixSeconds(s.enter);
    if (s.state != State::kEntered) e.exit_unix_s = UnixSeconds(s.exit);
    e.site = {s.site.file_name(), static_cast<int>(s.site.line()), s.site.function_name()};
    t.entries.push_back(std::move(e));
  }
  return t;
}

}  // namespace ddp::trace
