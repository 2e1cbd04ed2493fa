#include "core/comm/nccl_engine.h"

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace ddp::comm {
namespace {

std::string CudaText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + "ms"; }

}  // namespace

NcclEngine::NcclEngine(int device, int rank, int world_size)
    : device_(device), rank_(rank), world_size_(world_size) {
  Cuda(cudaSetDevice(device_), "cudaSetDevice");
  Cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclEngine::~NcclEngine() { Close(); }

nccl_wait::Closed NcclEngine::Close() {
  if (closed_) return *closed_;
  closed_ = nccl_wait::Closed::kNothing;
  cudaSetDevice(device_);
  if (comm_ != nullptr) {
    const auto until = Clock::now() + teardown_bound_;
    nccl_wait::Closer c;
    c.finalize = [&] {
      const ncclResult_t r = ncclCommFinalize(comm_);
      if (r == ncclSuccess) return nccl_wait::EngineState::kReady;
      return r == ncclInProgress ? nccl_wait::EngineState::kInProgress
                                 : nccl_wait::EngineState::kFailed;
    };
    c.engine = [&] {
      ncclResult_t state = ncclInProgress;
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return nccl_wait::EngineState::kFailed;
      if (state == ncclSuccess) return nccl_wait::EngineState::kReady;
      return state == ncclInProgress ? nccl_wait::EngineState::kInProgress
                                     : nccl_wait::EngineState::kFailed;
    };
    c.expired = [&] { return Clock::now() >= until; };
    c.destroy = [&] { ncclCommDestroy(comm_); };
    c.abort = [&] { AbortOnce(); };
    c.pause = [] { std::this_thread::sleep_for(std::chrono::microseconds(100)); };
    // The watchdog hook is gone by now (the owner unregisters it first), so
    // aborted_ can no longer change under us.
    closed_ = nccl_wait::Close(aborted_.load(), suspect_, c);
    if (*closed_ == nccl_wait::Closed::kLeft) {
      std::fprintf(stderr,
                   "[ddp::comm] rank %d: ncclCommFinalize still running after %lld ms; the "
                   "communicator is left to the process's exit (an abort now would wait on "
                   "the finalize)\n",
                   rank_, static_cast<long long>(teardown_bound_.count()));
      return *closed_;  // the finalize may still use the stream
    }
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  return *closed_;
}

void NcclEngine::Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  suspect_ = true;
  throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": " + CudaText(e));
}

void NcclEngine::Nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  suspect_ = true;
  throw EngineFailure(EngineFailure::Kind::kPeer,
                      std::string(what) + ": " + ncclGetErrorString(r) + " (" +
                          (comm_ != nullptr && !aborted_.load() ? ncclGetLastError(comm_) : "") +
                          ")");
}

void NcclEngine::Connect(store::Store& store, const std::string& key,
                         std::chrono::milliseconds bound) {
  ncclUniqueId id;
  try {
    if (rank_ == 0) {
      Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store.set(key, std::vector<char>(reinterpret_cast<char*>(&id),
                                       reinterpret_cast<char*>(&id) + sizeof(id)));
    } else {
      const auto bytes = store.get(key);
      if (bytes.size() != sizeof(id)) {
        throw EngineFailure(EngineFailure::Kind::kPeer, "bad NCCL unique id in the store");
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const EngineFailure& e) {
    throw EngineFailure(e.kind, std::string("rendezvous: ") + e.what());
  } catch (const std::exception& e) {
    throw EngineFailure(EngineFailure::Kind::kTimeout,
                        "rendezvous (start-up bound " + Ms(store.timeout()) + ") through " +
                            store.Describe() + ": " + e.what());
  }
  Cuda(cudaSetDevice(device_), "cudaSetDevice");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so a missing peer can be aborted instead of hanging
  const auto until = Clock::now() + bound;
  const ncclResult_t r = ncclCommInitRankConfig(&comm_, world_size_, id, rank_, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    suspect_ = true;
    throw EngineFailure(EngineFailure::Kind::kPeer,
                        std::string("init: ncclCommInitRankConfig: ") + ncclGetErrorString(r));
  }
  nccl_wait::Probes p = ProbesUntil(until, "ncclCommInitRankConfig");
  p.stream = [] { return nccl_wait::StreamState::kDrained; };  // nothing queued
  const nccl_wait::Result w = nccl_wait::Wait(p);
  if (w != nccl_wait::Result::kOk) {
    try {
      Throw(w, "ncclCommInitRankConfig", bound);
    } catch (const EngineFailure& e) {
      throw EngineFailure(e.kind, std::string("init: ") + e.what());
    }
  }
}

void NcclEngine::Run(const char* what, const std::function<ncclResult_t()>& enqueue,
                     const std::function<void()>& copy_back, std::chrono::milliseconds deadline) {
  Cuda(cudaSetDevice(device_), "cudaSetDevice");
  const auto until = Clock::now() + deadline;
  ncclResult_t r;
  {
    std::lock_guard<std::timed_mutex> lock(mu_);
    if (aborted_.load()) Throw(nccl_wait::Result::kAborted, what, deadline);
    r = enqueue();
  }
  Nccl(r, what);
  const nccl_wait::Result w = nccl_wait::Collective(ProbesUntil(until, what), copy_back);
  if (w != nccl_wait::Result::kOk) Throw(w, what, deadline);
}

nccl_wait::EngineState NcclEngine::ReadEngine(const char* what) {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (aborted_.load()) return nccl_wait::EngineState::kAborted;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) {
    suspect_ = true;
    throw EngineFailure(EngineFailure::Kind::kPeer,
                        std::string(what) + ": ncclCommGetAsyncError: " + ncclGetErrorString(r));
  }
  if (state == ncclSuccess) return nccl_wait::EngineState::kReady;
  if (state == ncclInProgress) return nccl_wait::EngineState::kInProgress;
  last_async_ = state;
  return nccl_wait::EngineState::kFailed;
}

nccl_wait::Probes NcclEngine::ProbesUntil(Clock::time_point until, const char* what) {
  nccl_wait::Probes p;
  p.engine = [this, what] { return ReadEngine(what); };
  p.stream = [this] {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return nccl_wait::StreamState::kDrained;
    if (q == cudaErrorNotReady) return nccl_wait::StreamState::kBusy;
    return nccl_wait::StreamState::kFailed;
  };
  p.expired = [until] { return Clock::now() >= until; };
  p.abort = [this] { AbortOnce(); };
  p.pause = [] { std::this_thread::sleep_for(std::chrono::microseconds(20)); };
  return p;
}

void NcclEngine::Throw(nccl_wait::Result r, const char* what, std::chrono::milliseconds bound) {
  suspect_ = true;
  using R = nccl_wait::Result;
  switch (r) {
    case R::kTimeout:
      throw EngineFailure(EngineFailure::Kind::kTimeout, "Timed out waiting " + Ms(bound) +
                                                             " for " + what +
                                                             "; communicator aborted");
    case R::kAborted:
      throw EngineFailure(EngineFailure::Kind::kTimeout,
                          std::string("Timed out in ") + what +
                              ": communicator aborted by the watchdog (this thread was stuck "
                              "past the deadline)");
    case R::kAsyncError:
      throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": async error " +
                                                          ncclGetErrorString(last_async_) +
                                                          "; communicator aborted");
    case R::kStreamError: {
      const cudaError_t q = cudaStreamQuery(stream_);
      throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": " + CudaText(q));
    }
    case R::kOk: break;
  }
  throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": unexpected wait result");
}

void NcclEngine::AbortOnce() {
  std::lock_guard<std::timed_mutex> lock(mu_);
  if (!aborted_.exchange(true)) ncclCommAbort(comm_);
}

// The main thread holds mu_ only for the length of one NCCL call; if it
// cannot be had within a second, that call is blocked inside NCCL, and
// ncclCommAbort from another thread is NCCL's way to release it. Either way
// the main thread never touches comm_ again (ReadEngine and Run check
// aborted_ first).
void NcclEngine::AbortFromWatchdog() {
  std::unique_lock<std::timed_mutex> lock(mu_, std::defer_lock);
  [[maybe_unused]] const bool locked = lock.try_lock_for(std::chrono::seconds(1));
  if (aborted_.exchange(true)) return;
  if (comm_ != nullptr) ncclCommAbort(comm_);
}

}  // namespace ddp::comm
