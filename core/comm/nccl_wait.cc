#include "core/comm/nccl_wait.h"

namespace ddp::comm::nccl_wait {

Step Next(StreamState stream, EngineState engine, bool expired) {
  // An aborted communicator's stream drains because NCCL's kernels quit, not
  // because the collective completed: never success, whatever the stream says.
  if (engine == EngineState::kAborted) return Step::kFailAborted;
  if (engine == EngineState::kFailed) return Step::kAbortAsyncError;
  if (stream == StreamState::kFailed) return Step::kFailStream;
  if (engine == EngineState::kReady && stream == StreamState::kDrained) return Step::kDone;
  if (expired) return Step::kAbortTimeout;
  return Step::kPoll;
}

const char* Name(Result r) {
  switch (r) {
    case Result::kOk: return "ok";
    case Result::kTimeout: return "timeout";
    case Result::kAsyncError: return "async error";
    case Result::kAborted: return "aborted";
    case Result::kStreamError: return "stream error";
  }
  return "?";
}

Result Wait(const Probes& p) {
  while (true) {
    // The communicator first: a stream read after it cannot show an enqueue
    // that the communicator has not yet reported finished.
    const EngineState engine = p.engine();
    const StreamState stream = p.stream();
    switch (Next(stream, engine, p.expired())) {
      case Step::kPoll: break;
      case Step::kDone: return Result::kOk;
      case Step::kAbortTimeout: p.abort(); return Result::kTimeout;
      case Step::kAbortAsyncError: p.abort(); return Result::kAsyncError;
      case Step::kFailAborted: return Result::kAborted;
      case Step::kFailStream: return Result::kStreamError;
    }
    p.pause();
  }
}

Result Collective(const Probes& probes, const std::function<void()>& copy_back) {
  const Result r = Wait(probes);
  if (r != Result::kOk || !copy_back) return r;
  copy_back();
  return Wait(probes);
}

Teardown Begin(bool aborted, bool suspect) {
  if (aborted) return Teardown::kNothing;
  return suspect ? Teardown::kAbort : Teardown::kFinalize;
}

Finalize AfterFinalize(EngineState engine, bool expired) {
  switch (engine) {
    case EngineState::kReady: return Finalize::kDestroy;
    case EngineState::kFailed: return Finalize::kAbort;
    case EngineState::kAborted: return Finalize::kLeave;  // not ours to touch
    case EngineState::kInProgress: return expired ? Finalize::kLeave : Finalize::kPoll;
  }
  return Finalize::kLeave;
}

const char* Name(Closed c) {
  switch (c) {
    case Closed::kNothing: return "nothing";
    case Closed::kDestroyed: return "destroyed";
    case Closed::kAborted: return "aborted";
    case Closed::kLeft: return "left running";
  }
  return "?";
}

Closed Close(bool aborted, bool suspect, const Closer& c) {
  switch (Begin(aborted, suspect)) {
    case Teardown::kNothing: return Closed::kNothing;
    case Teardown::kAbort: c.abort(); return Closed::kAborted;
    case Teardown::kFinalize: break;
  }
  EngineState state = c.finalize();
  while (true) {
    switch (AfterFinalize(state, c.expired())) {
      case Finalize::kPoll: break;
      case Finalize::kDestroy: c.destroy(); return Closed::kDestroyed;
      case Finalize::kAbort: c.abort(); return Closed::kAborted;
      case Finalize::kLeave: return Closed::kLeft;
    }
    c.pause();
    state = c.engine();
  }
}

}  // namespace ddp::comm::nccl_wait
