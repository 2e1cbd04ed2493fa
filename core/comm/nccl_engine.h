// One non-blocking NCCL communicator and its stream, with every wait
// bounded: the rendezvous (the unique id through the store), the
// communicator's init, each collective, and the teardown. The Comm API's
// NCCL backend (nccl_comm.cc) and bench/padding's raw NCCL gathers use it,
// so both stop a missing peer at a deadline the same way. The decisions
// (when a collective is done, when to abort, how to tear down) are
// nccl_wait.h's; this file only reads NCCL and CUDA and acts.
//
// One thread calls it; the watchdog thread may call AbortFromWatchdog()
// concurrently (the only call that may).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "core/comm/comm.h"
#include "core/comm/nccl_wait.h"
#include "core/store/store.h"

namespace ddp::comm {

class NcclEngine {
 public:
  // Selects `device` and creates the stream (non-blocking). Throws
  // EngineFailure on a CUDA error.
  NcclEngine(int device, int rank, int world_size);
  // Close(), if not yet done.
  ~NcclEngine();
  NcclEngine(const NcclEngine&) = delete;
  NcclEngine& operator=(const NcclEngine&) = delete;

  // Collective over the ranks: the unique id through `store` under `key`
  // (rank 0 writes it; the others wait up to the store's timeout), then a
  // non-blocking ncclCommInitRankConfig polled until ready or `bound`.
  // Throws EngineFailure whose message starts with the phase that failed:
  // "rendezvous" or "init".
  void Connect(store::Store& store, const std::string& key, std::chrono::milliseconds bound);

  // enqueue() queues NCCL calls on stream() (it may return ncclInProgress);
  // then waits until the communicator is ready and the stream drained,
  // runs copy_back() (may be empty) and checks again (nccl_wait::Collective).
  // Past `deadline`, or on an asynchronous error, the communicator is
  // aborted. Throws EngineFailure (kTimeout or kPeer).
  void Run(const char* what, const std::function<ncclResult_t()>& enqueue,
           const std::function<void()>& copy_back, std::chrono::milliseconds deadline);

  // The watchdog's last resort when the calling thread is stuck inside NCCL
  // past the deadline.
  void AbortFromWatchdog();

  // Tears the communicator down (nccl_wait::Close): finalize polled to
  // completion within teardown_bound(), then destroy; abort at once when
  // suspect(); never an abort under a running finalize. The owner's abort
  // hook must be gone first. Idempotent. kLeft: finalize was still running
  // at the bound; the communicator and its stream are left to the process's
  // exit, and so must be device memory it may use (cudaFree synchronises
  // the device, which would wait on the finalize).
  nccl_wait::Closed Close();

  // Throws EngineFailure (kPeer) for a CUDA error; marks the engine suspect.
  void Cuda(cudaError_t e, const char* what);

  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  // A call or collective failed: teardown aborts instead of finalizing.
  bool suspect() const { return suspect_; }
  std::chrono::milliseconds teardown_bound() const { return teardown_bound_; }
  void set_teardown_bound(std::chrono::milliseconds b) { teardown_bound_ = b; }

 private:
  using Clock = std::chrono::steady_clock;

  nccl_wait::Probes ProbesUntil(Clock::time_point deadline, const char* what);
  nccl_wait::EngineState ReadEngine(const char* what);
  [[noreturn]] void Throw(nccl_wait::Result r, const char* what, std::chrono::milliseconds bound);
  void Nccl(ncclResult_t r, const char* what);
  void AbortOnce();

  int device_;
  int rank_;
  int world_size_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool suspect_ = false;
  std::optional<nccl_wait::Closed> closed_;
  ncclResult_t last_async_ = ncclSuccess;  // what the last failing poll read
  std::chrono::milliseconds teardown_bound_{60000};
  std::timed_mutex mu_;               // this thread's NCCL calls vs the watchdog's abort
  std::atomic<bool> aborted_{false};  // comm_ was aborted: never touch it again
};

}  // namespace ddp::comm
