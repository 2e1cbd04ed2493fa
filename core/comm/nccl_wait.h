// The NCCL backend's wait and teardown decisions, without CUDA or NCCL: the
// backend (nccl_engine.cc) reads the stream and the communicator, turns
// what it read into the states below, and does what these functions say.
// nccl_wait_test drives them with injected states on any machine.
//
// A collective on a non-blocking communicator is done only when both hold:
// the communicator is ready (ncclCommGetAsyncError says ncclSuccess: the
// enqueue itself may still be in progress, and until it is not, the stream
// holds nothing yet) and the stream has drained (cudaStreamQuery). Results
// staged through device memory are copied back only then: a device-to-host
// cudaMemcpyAsync into pageable memory returns only when the copy is done,
// so a copy queued behind a collective that a missing peer never lets finish
// blocks the thread where no deadline can reach it. After the copy the
// stream drains again and the communicator is read again: one aborted in
// the meantime (by the watchdog) or with an asynchronous error has produced
// garbage, which is a failure, never a completed collective.
#pragma once

#include <functional>

namespace ddp::comm::nccl_wait {

// cudaStreamQuery: cudaErrorNotReady, cudaSuccess, anything else.
enum class StreamState { kBusy, kDrained, kFailed };
// The communicator: ncclCommGetAsyncError's ncclSuccess, ncclInProgress,
// any other result; kAborted when ncclCommAbort was called on it (it must
// not be touched again).
enum class EngineState { kReady, kInProgress, kFailed, kAborted };

// One decision of the wait loop.
enum class Step {
  kPoll,             // nothing decided yet: poll again
  kDone,             // ready and drained
  kAbortTimeout,     // past the deadline: abort the communicator, fail
  kAbortAsyncError,  // an asynchronous error: abort the communicator, fail
  kFailAborted,      // aborted elsewhere (the watchdog): fail, touch nothing
  kFailStream,       // the stream reports a CUDA error: fail
};
Step Next(StreamState stream, EngineState engine, bool expired);

enum class Result { kOk, kTimeout, kAsyncError, kAborted, kStreamError };
const char* Name(Result r);

// What the loop reads and does; the backend binds them to the real calls.
struct Probes {
  std::function<StreamState()> stream;
  std::function<EngineState()> engine;
  std::function<bool()> expired;  // is the deadline past?
  std::function<void()> abort;    // ncclCommAbort (called at most once per Wait)
  std::function<void()> pause;    // between polls
};

// Polls until Next decides; calls probes.abort for the kAbort* steps.
Result Wait(const Probes& probes);

// A collective after its enqueue: Wait; then, when it succeeded and there is
// something to copy back, copy_back() (the stream has drained, so the copies
// run at once) and Wait again. copy_back may be empty.
Result Collective(const Probes& probes, const std::function<void()>& copy_back);

// ---- teardown ----

// What the destructor does first: nothing (already aborted), abort at once
// (the engine is suspect: a failed call or collective), or finalize.
enum class Teardown { kNothing, kAbort, kFinalize };
Teardown Begin(bool aborted, bool suspect);

// After ncclCommFinalize: poll while it runs (kInProgress) within the bound;
// ncclCommDestroy when it succeeded; ncclCommAbort when it ended with an
// error (it has ended: nothing runs concurrently with the abort); and when
// the bound passes with finalize still running, leave the communicator to
// the process's exit rather than abort it under the running finalize
// (ncclCommAbort joins the communicator's running group job first,
// ncclGroupJobAbort in NCCL's group.cc, so it would wait on, and hang with,
// the finalize it meant to cut short).
enum class Finalize { kPoll, kDestroy, kAbort, kLeave };
Finalize AfterFinalize(EngineState engine, bool expired);

enum class Closed { kNothing, kDestroyed, kAborted, kLeft };
const char* Name(Closed c);

struct Closer {
  std::function<EngineState()> finalize;  // ncclCommFinalize's own result
  std::function<EngineState()> engine;    // then ncclCommGetAsyncError
  std::function<bool()> expired;
  std::function<void()> destroy;
  std::function<void()> abort;
  std::function<void()> pause;
};

// The whole teardown.
Closed Close(bool aborted, bool suspect, const Closer& closer);

}  // namespace ddp::comm::nccl_wait
