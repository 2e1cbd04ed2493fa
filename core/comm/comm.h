// ddp::comm::Comm: collectives across the ranks of one run, on a real engine.
//
// One interface, two backends (Gloo on CPU, NCCL on GPU), chosen by
// MakeComm() (core/comm/make_comm.h). This base class does what both share:
// per-communicator sequence numbers, checked mode (fingerprints exchanged and
// compared before the engine is touched), the flight recorder (every
// collective in an in-memory ring buffer, with its call site; core/trace),
// and turning engine failures into DeadlineError/PeerError with a desync
// report: the analyzer's verdict over every rank's flight recorder dump.
//
// Every collective takes a defaulted std::source_location: the recorder
// keeps the caller's file, line and function, so a desync report names the
// line of user code that entered the collective. Pass one explicitly only
// when wrapping these calls and the wrapper's caller is the better site.
//
// Raw mode (the default) passes each call straight to the engine, even when
// ranks disagree: that is how the repros show what really happens,
// undefined behaviour included. Checked mode (CommOptions::checked or
// DDP_PITFALLS_CHECK=1) throws CheckError on every rank instead.
//
// Buffers are (pointer, count, DType); the typed overloads take spans of
// float, double, int32_t or int64_t. The NCCL backend takes device buffers
// and also host buffers, which it stages through device memory
// (staged_copies() counts those copies). A Comm is used by
// one thread. After a failure it is broken: every later call throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/collective/fingerprint.h"
#include "core/collective/types.h"
#include "core/comm/errors.h"
#include "core/store/store.h"
#include "core/trace/recorder.h"

namespace ddp::comm {

// What a backend throws from an engine call; the base class wraps it.
struct EngineFailure : std::runtime_error {
  enum class Kind { kTimeout, kPeer };
  EngineFailure(Kind k, const std::string& message) : std::runtime_error(message), kind(k) {}
  Kind kind;
};

// Settings a backend passes to the base class.
struct CommSetup {
  int rank = 0;
  int world_size = 1;
  std::string backend;
  std::chrono::milliseconds timeout{60000};
  // The start-up bound: the rendezvous and the engine's connection, which
  // may take longer than a short collective deadline (options.h).
  std::chrono::milliseconds startup_timeout{60000};
  // The engine connects to its peers inside the first collective (NCCL
  // does, lazily; Gloo connects before): that collective then gets the
  // start-up bound too.
  bool lazy_connect = false;
  bool checked = false;
  std::shared_ptr<store::Store> store;  // namespaced for this communicator
  std::string name;                      // the communicator's name (its store namespace)
  std::string run_id;
  std::size_t trace_entries = trace::kDefaultEntries;  // flight recorder ring; 0: off
  std::string trace_dir;                 // where the watchdog writes rank<R>.json
  // Where this rank runs, for peers' reports when it goes silent: the host
  // name, and the address it binds when it has one ("vm (10.77.0.2)").
  std::string host;
};

class Comm {
 public:
  virtual ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& backend() const { return backend_; }
  bool checked() const { return checked_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::chrono::milliseconds startup_timeout() const { return startup_timeout_; }
  // Sequence number the next collective will get (0 for the first).
  int64_t next_seq() const { return seq_; }

  // Gloo only: the algorithm of the allgathervs that follow (ring or direct
  // exchange, gloo_allgatherv.h); other backends ignore it. Every rank must
  // make the same choice before the same call, as with the call itself: a
  // ring rank and a direct rank wait for messages the other never sends
  // (the deadline), or a piece arrives larger than the one posted and
  // Gloo aborts the process, as with mismatched counts in raw mode
  // (failure_test MismatchedAlgorithm). Checked mode compares the choice
  // and the piece size with the rest of the call's fingerprint, and a
  // mismatch is a CheckError on every rank. Lets one communicator time both
  // algorithms on the same connections (bench/padding).
  void set_gloo_allgatherv(GlooAllgathervAlgorithm a) { gloo_allgatherv_ = a; }
  GlooAllgathervAlgorithm gloo_allgatherv() const { return gloo_allgatherv_; }

  using Site = std::source_location;

  // recv: world_size * count elements, rank r's contribution at r * count.
  void Allgather(const void* send, void* recv, std::size_t count, DType dtype,
                 Site site = Site::current());
  // recv: sum(counts) elements, rank r's at sum(counts[0..r)); counts.size()
  // must be world_size and count is this rank's own contribution.
  void Allgatherv(const void* send, std::size_t count, void* recv,
                  std::span<const std::size_t> counts, DType dtype, Site site = Site::current());
  // In place, as torch.distributed.all_reduce.
  void Allreduce(void* data, std::size_t count, DType dtype, ReduceOp op,
                 Site site = Site::current());
  // In place: root's data is copied to every rank.
  void Broadcast(void* data, std::size_t count, DType dtype, int root,
                 Site site = Site::current());
  // send: world_size * recv_count elements; recv: the sum over ranks of
  // block `rank` (recv_count elements).
  void ReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                     Site site = Site::current());
  void Barrier(Site site = Site::current());

  // Typed conveniences.
  template <typename T>
  std::vector<T> Allgather(std::span<const T> mine, Site site = Site::current()) {
    std::vector<T> out(mine.size() * static_cast<std::size_t>(world_size_));
    Allgather(mine.data(), out.data(), mine.size(), DTypeOf<T>(), site);
    return out;
  }
  template <typename T>
  std::vector<T> Allgatherv(std::span<const T> mine, std::span<const std::size_t> counts,
                            Site site = Site::current()) {
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    std::vector<T> out(total);
    Allgatherv(mine.data(), mine.size(), out.data(), counts, DTypeOf<T>(), site);
    return out;
  }
  template <typename T>
  void Allreduce(std::span<T> data, ReduceOp op = ReduceOp::kSum, Site site = Site::current()) {
    Allreduce(data.data(), data.size(), DTypeOf<T>(), op, site);
  }
  template <typename T>
  void Broadcast(std::span<T> data, int root, Site site = Site::current()) {
    Broadcast(data.data(), data.size(), DTypeOf<T>(), root, site);
  }
  template <typename T>
  std::vector<T> ReduceScatter(std::span<const T> input, Site site = Site::current()) {
    if (input.size() % static_cast<std::size_t>(world_size_) != 0) {
      throw std::invalid_argument("ReduceScatter: input size " + std::to_string(input.size()) +
                                  " is not a multiple of world size " +
                                  std::to_string(world_size_));
    }
    std::vector<T> out(input.size() / static_cast<std::size_t>(world_size_));
    ReduceScatter(input.data(), out.data(), out.size(), DTypeOf<T>(), site);
    return out;
  }

  // What this communicator's engine copied between host and device memory to
  // stage host buffers so far. The NCCL backend copies a host buffer into
  // device scratch before its collective and back after it (a device buffer
  // is used as it is); Gloo works on host memory and copies nothing. So a
  // host-buffer call on NCCL costs these copies beyond the collective.
  struct StagedCopies {
    int64_t h2d_calls = 0;
    int64_t h2d_bytes = 0;
    int64_t d2h_calls = 0;
    int64_t d2h_bytes = 0;
  };
  virtual StagedCopies staged_copies() const { return {}; }

  // Marks the communicator finished (its dumps say so; later calls throw).
  // Called by the destructor unless the communicator failed; idempotent.
  void Finish();

  // Registers this communicator's recorder with the process's watchdog
  // (core/trace/watchdog.h). MakeComm calls it once the engine is connected;
  // idempotent. Without it (or with trace_entries = 0), a failure's report
  // holds this rank's entries only.
  void StartWatchdog();

  // How long a failing rank waits for the other ranks' dumps. Short because
  // it adds to every failure's time: a fault must end the run within the
  // collective deadline + 1 s (core/launch/README.md), and the rank still has
  // to print, exit and be reaped. Healthy peers answer within one watchdog
  // tick (50 ms) plus a store round trip; only a stopped rank uses it all.
  static constexpr std::chrono::milliseconds kDumpWait{400};

 protected:
  explicit Comm(CommSetup setup);

  // Leaves this rank's final dump in the store (unless the communicator
  // failed: its failure dump is there already) and unregisters from the
  // watchdog, waiting for a running abort hook. Idempotent. A backend whose
  // abort hook uses its own members calls this first in its destructor.
  void StopWatchdog();
  // What the watchdog runs when this communicator's thread is stuck inside
  // the engine past the deadline (NCCL: ncclCommAbort). None by default.
  virtual std::function<void()> WatchdogAbortHook() { return nullptr; }
  // The engine_variant of this rank's next allgatherv (fingerprint.h): how
  // the engine will run it, which checked mode compares. None by default.
  virtual uint64_t AllgathervEngineVariant() const { return 0; }
  // The bound of the collective in progress: timeout(), or
  // startup_timeout() for the first one (sequence number 0) of an engine
  // that connects inside it (CommSetup::lazy_connect).
  std::chrono::milliseconds call_deadline() const { return call_deadline_; }

  // Engine calls. `tag` is unique per call and equal on every rank for the
  // same sequence number. Failures: throw EngineFailure.
  virtual void EngineAllgather(const void* send, void* recv, std::size_t count, DType dtype,
                               uint32_t tag) = 0;
  virtual void EngineAllgatherv(const void* send, std::size_t count, void* recv,
                                std::span<const std::size_t> counts, DType dtype,
                                uint32_t tag) = 0;
  virtual void EngineAllreduce(void* data, std::size_t count, DType dtype, ReduceOp op,
                               uint32_t tag) = 0;
  virtual void EngineBroadcast(void* data, std::size_t count, DType dtype, int root,
                               uint32_t tag) = 0;
  virtual void EngineReduceScatter(const void* send, void* recv, std::size_t recv_count,
                                   DType dtype, uint32_t tag) = 0;
  virtual void EngineBarrier(uint32_t tag) = 0;
  // Checked mode: every rank's fingerprint (index = rank), over a CPU channel.
  virtual std::vector<Fingerprint> EngineExchangeFingerprints(const Fingerprint& mine,
                                                              uint32_t tag) = 0;

 private:
  // Sequence number, flight recorder entry, checked-mode comparison, error wrap.
  template <typename EngineCall>
  void Run(Fingerprint fp, std::span<const std::size_t> counts, const Site& site,
           EngineCall&& call);
  [[noreturn]] void Fail(const Fingerprint& fp, const EngineFailure& failure,
                         std::chrono::milliseconds elapsed, bool in_check);
  void ThrowIfBroken(OpKind op) const;

  int rank_;
  int world_size_;
  std::string backend_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds startup_timeout_;
  std::chrono::milliseconds first_deadline_;  // of collective #0
  std::chrono::milliseconds call_deadline_;
  bool checked_;
  std::shared_ptr<store::Store> store_;
  std::string run_id_;
  std::string trace_dir_;
  std::string host_;
  std::shared_ptr<trace::FlightRecorder> recorder_;  // null: recorder off
  int watchdog_id_ = -1;
  int64_t seq_ = 0;
  bool broken_ = false;
  bool finished_ = false;
  GlooAllgathervAlgorithm gloo_allgatherv_ = GlooAllgathervAlgorithm::kRing;
  std::string broken_reason_;
};

}  // namespace ddp::comm
