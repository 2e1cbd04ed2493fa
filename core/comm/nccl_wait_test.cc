// The NCCL backend's wait and teardown decisions (nccl_wait.h) driven with
// injected stream and communicator states: no GPU, no NCCL.
#include "core/comm/nccl_wait.h"

#include <vector>

#include "gtest/gtest.h"

namespace ddp::comm::nccl_wait {
namespace {

// A scripted rank: time advances one tick per pause; the stream drains at
// `drain_at` (never when < 0), the enqueue finishes at `ready_at`, the
// deadline passes at `expire_at`. Every probe call is logged.
struct Fake {
  int tick = 0;
  int drain_at = -1;
  int ready_at = 0;
  int expire_at = 1000;
  bool stream_failed = false;
  EngineState after_ready = EngineState::kReady;  // what the communicator says once ready
  int aborts = 0;
  int copies = 0;
  std::vector<int> copy_ticks;
  bool copied_while_busy = false;

  StreamState Stream() const {
    if (stream_failed) return StreamState::kFailed;
    return drain_at >= 0 && tick >= drain_at ? StreamState::kDrained : StreamState::kBusy;
  }
  EngineState Engine() const {
    if (aborts > 0) return EngineState::kAborted;
    return tick >= ready_at ? after_ready : EngineState::kInProgress;
  }
  Probes probes() {
    Probes p;
    p.stream = [this] { return Stream(); };
    p.engine = [this] { return Engine(); };
    p.expired = [this] { return tick >= expire_at; };
    p.abort = [this] { ++aborts; };
    p.pause = [this] { ++tick; };
    return p;
  }
  std::function<void()> copy_back() {
    return [this] {
      ++copies;
      copy_ticks.push_back(tick);
      // A pageable device-to-host copy behind a collective that never ends
      // would block here forever: the loop must never get here then.
      if (Stream() != StreamState::kDrained) copied_while_busy = true;
    };
  }
};

TEST(NcclWait, MissingPeerTimesOutWithoutEverCopyingBack) {
  Fake f;  // enqueued at once, the stream never drains (a peer never came)
  f.expire_at = 5;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kTimeout);
  EXPECT_EQ(f.copies, 0);
  EXPECT_FALSE(f.copied_while_busy);
  EXPECT_EQ(f.aborts, 1);
  EXPECT_EQ(f.tick, 5);
}

TEST(NcclWait, CopiesBackOnceTheStreamHasDrained) {
  Fake f;
  f.drain_at = 3;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kOk);
  EXPECT_EQ(f.copies, 1);
  EXPECT_FALSE(f.copied_while_busy);
  EXPECT_EQ(f.copy_ticks, std::vector<int>{3});
  EXPECT_EQ(f.aborts, 0);
}

TEST(NcclWait, EnqueueStillInProgressIsNotDoneEvenOnAnIdleStream) {
  Fake f;
  f.drain_at = 0;  // nothing on the stream yet: NCCL has not enqueued it
  f.ready_at = 4;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kOk);
  EXPECT_EQ(f.copy_ticks, std::vector<int>{4});
}

TEST(NcclWait, AbortedByTheWatchdogDuringTheCopyIsAFailure) {
  Fake f;
  f.drain_at = 2;
  Probes p = f.probes();
  // The watchdog aborts the communicator while the copy runs; its stream
  // then drains as if all went well.
  auto copy = [&f] { ++f.copies; ++f.aborts; };
  EXPECT_EQ(Collective(p, copy), Result::kAborted);
  EXPECT_EQ(f.copies, 1);
  EXPECT_EQ(f.aborts, 1);  // not aborted a second time
}

TEST(NcclWait, AsynchronousErrorSeenAfterTheStreamDrainsIsAFailure) {
  Fake f;
  f.drain_at = 1;
  auto copy = [&f] {
    ++f.copies;
    f.after_ready = EngineState::kFailed;  // e.g. a peer's connection closed
  };
  EXPECT_EQ(Collective(f.probes(), copy), Result::kAsyncError);
  EXPECT_EQ(f.aborts, 1);
}

TEST(NcclWait, AbortedCommunicatorWithADrainedStreamIsNeverSuccess) {
  Fake f;
  f.drain_at = 0;
  f.aborts = 1;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kAborted);
  EXPECT_EQ(f.copies, 0);
  EXPECT_EQ(f.aborts, 1);
}

TEST(NcclWait, AsynchronousErrorWhileBusyAbortsAtOnce) {
  Fake f;
  f.after_ready = EngineState::kFailed;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kAsyncError);
  EXPECT_EQ(f.aborts, 1);
  EXPECT_EQ(f.tick, 0);
  EXPECT_EQ(f.copies, 0);
}

TEST(NcclWait, StreamErrorFails) {
  Fake f;
  f.stream_failed = true;
  EXPECT_EQ(Collective(f.probes(), f.copy_back()), Result::kStreamError);
  EXPECT_EQ(f.copies, 0);
}

TEST(NcclWait, InitWaitIsTheSameLoopWithoutAStream) {
  Fake f;
  f.drain_at = 0;
  f.ready_at = 1000;
  f.expire_at = 7;
  EXPECT_EQ(Wait(f.probes()), Result::kTimeout);
  EXPECT_EQ(f.aborts, 1);
  EXPECT_EQ(f.tick, 7);
}

TEST(NcclWait, DoneWinsOverAnExpiryReadInTheSamePoll) {
  EXPECT_EQ(Next(StreamState::kDrained, EngineState::kReady, true), Step::kDone);
  EXPECT_EQ(Next(StreamState::kBusy, EngineState::kReady, true), Step::kAbortTimeout);
  EXPECT_EQ(Next(StreamState::kBusy, EngineState::kInProgress, false), Step::kPoll);
}

// ---- teardown ----

struct FakeClose {
  int tick = 0;
  int finalize_done_at = 0;  // finalize runs until then
  EngineState finalize_result = EngineState::kReady;
  int expire_at = 1000;
  int finalizes = 0, destroys = 0, aborts = 0;
  bool aborted_while_finalizing = false;

  bool Finalizing() const { return finalizes > 0 && tick < finalize_done_at; }
  EngineState Engine() const { return Finalizing() ? EngineState::kInProgress : finalize_result; }
  Closer closer() {
    Closer c;
    c.finalize = [this] {
      ++finalizes;
      return Engine();
    };
    c.engine = [this] { return Engine(); };
    c.expired = [this] { return tick >= expire_at; };
    c.destroy = [this] { ++destroys; };
    c.abort = [this] {
      ++aborts;
      if (Finalizing()) aborted_while_finalizing = true;
    };
    c.pause = [this] { ++tick; };
    return c;
  }
};

TEST(NcclTeardown, HealthyFinalizeIsPolledToCompletionThenDestroyed) {
  FakeClose f;
  f.finalize_done_at = 4;
  EXPECT_EQ(Close(false, false, f.closer()), Closed::kDestroyed);
  EXPECT_EQ(f.finalizes, 1);
  EXPECT_EQ(f.destroys, 1);
  EXPECT_EQ(f.aborts, 0);
  EXPECT_EQ(f.tick, 4);
}

TEST(NcclTeardown, FinalizeStillRunningAtTheBoundIsNeverAbortedUnderIt) {
  FakeClose f;
  f.finalize_done_at = 1000000;
  f.expire_at = 10;
  EXPECT_EQ(Close(false, false, f.closer()), Closed::kLeft);
  EXPECT_EQ(f.aborts, 0);
  EXPECT_EQ(f.destroys, 0);
  EXPECT_FALSE(f.aborted_while_finalizing);
}

TEST(NcclTeardown, FinalizeThatEndsInAnErrorIsAbortedAfterItEnded) {
  FakeClose f;
  f.finalize_done_at = 3;
  f.finalize_result = EngineState::kFailed;
  EXPECT_EQ(Close(false, false, f.closer()), Closed::kAborted);
  EXPECT_EQ(f.aborts, 1);
  EXPECT_FALSE(f.aborted_while_finalizing);
  EXPECT_EQ(f.destroys, 0);
}

TEST(NcclTeardown, SuspectEngineIsAbortedWithoutFinalize) {
  FakeClose f;
  EXPECT_EQ(Close(false, true, f.closer()), Closed::kAborted);
  EXPECT_EQ(f.finalizes, 0);
  EXPECT_EQ(f.aborts, 1);
}

TEST(NcclTeardown, AlreadyAbortedIsLeftAlone) {
  FakeClose f;
  EXPECT_EQ(Close(true, true, f.closer()), Closed::kNothing);
  EXPECT_EQ(f.finalizes + f.aborts + f.destroys, 0);
}

}  // namespace
}  // namespace ddp::comm::nccl_wait
