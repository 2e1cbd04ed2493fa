#include "core/comm/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/comm/gloo_comm.h"

namespace ddp::comm {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
  }
  throw std::invalid_argument("unknown DType");
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
  }
  throw std::invalid_argument("unknown ReduceOp");
}

std::string CudaText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

void CudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": " + CudaText(e));
  }
}

// Picks this rank's GPU: one per local rank, or a shared one when allowed.
int SelectDevice(const CommOptions& options) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    throw ConfigError("backend 'nccl' needs a GPU, but none is usable here (" +
                      (e != cudaSuccess ? CudaText(e) : std::string("0 devices")) +
                      "): use --backend gloo");
  }
  if (options.local_rank < count) return options.local_rank;
  if (!options.share_gpu) {
    throw ConfigError("LOCAL_RANK=" + std::to_string(options.local_rank) + " needs GPU " +
                      std::to_string(options.local_rank) + " but only " + std::to_string(count) +
                      " are visible: run fewer ranks per host, or pass --share-gpu (ddprun) / "
                      "DDP_SHARE_GPU=1 to share GPUs (functional runs only)");
  }
  return options.local_rank % count;
}

class NcclComm final : public Comm {
 public:
  NcclComm(CommSetup setup, int device, std::unique_ptr<Comm> helper)
      : Comm(setup), device_(device), helper_(std::move(helper)) {}

  ~NcclComm() override {
    StopWatchdog();  // no abort hook may run from here on
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      if (aborted_.load()) {
        // Already aborted.
      } else if (broken_engine_) {
        ncclCommAbort(comm_);
      } else {
        // Flush, then destroy; abort if a peer makes the flush hang.
        ncclCommFinalize(comm_);
        ncclResult_t state = ncclInProgress;
        const auto deadline = Clock::now() + timeout();
        while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
               Clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        if (state == ncclSuccess) {
          ncclCommDestroy(comm_);
        } else {
          ncclCommAbort(comm_);
        }
      }
    }
    for (void* p : scratch_) {
      if (p != nullptr) cudaFree(p);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // Rendezvous (unique id through the store) and non-blocking init, bounded
  // by the deadline.
  void Init(launch::Store& store) {
    CudaCheck(cudaSetDevice(device_), "cudaSetDevice");
    CudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclUniqueId id;
    if (rank() == 0) {
      Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store.set("nccl/unique_id",
                std::vector<char>(reinterpret_cast<char*>(&id), reinterpret_cast<char*>(&id) + sizeof(id)));
    } else {
      const auto bytes = store.get("nccl/unique_id");
      if (bytes.size() != sizeof(id)) {
        throw EngineFailure(EngineFailure::Kind::kPeer, "bad NCCL unique id in the store");
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so a missing peer can be aborted instead of hanging
    const auto start = Clock::now();
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, world_size(), id, rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) Nccl(r, "ncclCommInitRankConfig");
    WaitComm(start, "ncclCommInitRankConfig");
  }

 protected:
  void EngineAllgather(const void* send, void* recv, std::size_t count, DType dtype,
                       uint32_t) override {
    const std::size_t b = count * SizeOf(dtype);
    Staging st(this);
    const void* s = st.In(send, b, 0);
    void* d = st.Out(recv, b * static_cast<std::size_t>(world_size()), 1);
    Launch([&] { return ncclAllGather(s, d, count, NcclType(dtype), comm_, stream_); },
           "ncclAllGather", st);
  }

  void EngineAllgatherv(const void* send, std::size_t count, void* recv,
                        std::span<const std::size_t> counts, DType dtype, uint32_t) override {
    // As PyTorch does for uneven all_gather on NCCL: one broadcast per rank,
    // grouped so they run as one operation.
    const std::size_t es = SizeOf(dtype);
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    Staging st(this);
    const void* s = st.In(send, count * es, 0);
    void* d = st.Out(recv, total * es, 1);
    Launch(
        [&] {
          ncclResult_t r = ncclGroupStart();
          if (r != ncclSuccess) return r;
          std::size_t offset = 0;
          for (int root = 0; root < world_size(); ++root) {
            const void* src = root == rank() ? s : nullptr;
            r = ncclBroadcast(src, static_cast<char*>(d) + offset * es, counts[root],
                              NcclType(dtype), root, comm_, stream_);
            if (r != ncclSuccess && r != ncclInProgress) {
              ncclGroupEnd();
              return r;
            }
            offset += counts[root];
          }
          return ncclGroupEnd();
        },
        "grouped ncclBroadcast (allgatherv)", st);
  }

  void EngineAllreduce(void* data, std::size_t count, DType dtype, ReduceOp op,
                       uint32_t) override {
    Staging st(this);
    void* d = st.InOut(data, count * SizeOf(dtype), 0);
    Launch([&] { return ncclAllReduce(d, d, count, NcclType(dtype), NcclOp(op), comm_, stream_); },
           "ncclAllReduce", st);
  }

  void EngineBroadcast(void* data, std::size_t count, DType dtype, int root, uint32_t) override {
    Staging st(this);
    void* d = st.InOut(data, count * SizeOf(dtype), 0);
    Launch([&] { return ncclBroadcast(d, d, count, NcclType(dtype), root, comm_, stream_); },
           "ncclBroadcast", st);
  }

  void EngineReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                           uint32_t) override {
    const std::size_t b = recv_count * SizeOf(dtype);
    Staging st(this);
    const void* s = st.In(send, b * static_cast<std::size_t>(world_size()), 0);
    void* d = st.Out(recv, b, 1);
    Launch([&] {
      return ncclReduceScatter(s, d, recv_count, NcclType(dtype), ncclSum, comm_, stream_);
    },
           "ncclReduceScatter", st);
  }

  void EngineBarrier(uint32_t) override {
    // As PyTorch does: an allreduce of one element on the device.
    Staging st(this);
    int32_t one = 1;
    void* d = st.InOut(&one, sizeof(one), 0);
    Launch([&] { return ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comm_, stream_); },
           "ncclAllReduce (barrier)", st);
  }

  // The watchdog's last resort when this rank's thread is stuck past the
  // deadline: abort the communicator from the watchdog thread.
  std::function<void()> WatchdogAbortHook() override {
    return [this] { AbortFromWatchdog(); };
  }

  std::vector<Fingerprint> EngineExchangeFingerprints(const Fingerprint& mine, uint32_t) override {
    // Over a helper Gloo communicator (CPU), as PyTorch's ProcessGroupWrapper.
    const auto bytes = mine.Serialize();
    std::vector<int64_t> words(Fingerprint::kBytes / 8);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    std::vector<int64_t> all;
    try {
      all = helper_->Allgather(std::span<const int64_t>(words));
    } catch (const DeadlineError& e) {
      throw EngineFailure(EngineFailure::Kind::kTimeout, e.context().engine_message);
    } catch (const PeerError& e) {
      throw EngineFailure(EngineFailure::Kind::kPeer, e.context().engine_message);
    }
    std::vector<Fingerprint> out;
    for (int r = 0; r < world_size(); ++r) {
      out.push_back(Fingerprint::Deserialize(
          reinterpret_cast<const char*>(all.data() + static_cast<std::size_t>(r) * words.size())));
    }
    return out;
  }

 private:
  // Host buffers are copied through device scratch memory (one slot per
  // role); device buffers are used as they are.
  class Staging {
   public:
    explicit Staging(NcclComm* c) : c_(c) {}
    const void* In(const void* p, std::size_t bytes, int slot) {
      if (bytes == 0 || IsDevice(p)) return p;
      void* d = c_->Scratch(slot, bytes);
      CudaCheck(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, c_->stream_), "cudaMemcpyAsync");
      return d;
    }
    void* Out(void* p, std::size_t bytes, int slot) {
      if (bytes == 0 || IsDevice(p)) return p;
      void* d = c_->Scratch(slot, bytes);
      back_.push_back({p, d, bytes});
      return d;
    }
    void* InOut(void* p, std::size_t bytes, int slot) {
      if (bytes == 0 || IsDevice(p)) return p;
      In(p, bytes, slot);
      return Out(p, bytes, slot);
    }
    void CopyBack() {
      for (const auto& b : back_) {
        CudaCheck(cudaMemcpyAsync(b.host, b.dev, b.bytes, cudaMemcpyDeviceToHost, c_->stream_),
                  "cudaMemcpyAsync");
      }
    }

   private:
    static bool IsDevice(const void* p) {
      cudaPointerAttributes attr{};
      if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky-free error of older runtimes
        return false;
      }
      return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
    }
    struct Back {
      void* host;
      void* dev;
      std::size_t bytes;
    };
    NcclComm* c_;
    std::vector<Back> back_;
  };

  void* Scratch(int slot, std::size_t bytes) {
    if (scratch_bytes_[slot] < bytes) {
      if (scratch_[slot] != nullptr) cudaFree(scratch_[slot]);
      scratch_[slot] = nullptr;
      scratch_bytes_[slot] = 0;
      CudaCheck(cudaMalloc(&scratch_[slot], bytes), "cudaMalloc (staging)");
      scratch_bytes_[slot] = bytes;
    }
    return scratch_[slot];
  }

  void Nccl(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    broken_engine_ = true;
    throw EngineFailure(EngineFailure::Kind::kPeer,
                        std::string(what) + ": " + ncclGetErrorString(r) + " (" +
                            (comm_ != nullptr && !aborted_.load() ? ncclGetLastError(comm_) : "") + ")");
  }

  // Enqueue (which may itself be in progress on a non-blocking comm), then
  // poll stream completion and the communicator's async error until the
  // deadline; abort the communicator on expiry or error.
  template <typename Enqueue>
  void Launch(Enqueue&& enqueue, const char* what, Staging& st) {
    CudaCheck(cudaSetDevice(device_), "cudaSetDevice");
    const auto start = Clock::now();
    const ncclResult_t r = Locked(what, [&] { return enqueue(); });
    if (r != ncclSuccess && r != ncclInProgress) Nccl(r, what);
    WaitComm(start, what);
    st.CopyBack();
    WaitStream(start, what);
  }

  void WaitComm(Clock::time_point start, const char* what) {
    while (true) {
      ncclResult_t state = ncclSuccess;
      Nccl(Locked(what, [&] { return ncclCommGetAsyncError(comm_, &state); }),
           "ncclCommGetAsyncError");
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) Abort(EngineFailure::Kind::kPeer, what, state);
      if (Clock::now() - start > timeout()) Abort(EngineFailure::Kind::kTimeout, what, state);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void WaitStream(Clock::time_point start, const char* what) {
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) {
        broken_engine_ = true;
        throw EngineFailure(EngineFailure::Kind::kPeer, std::string(what) + ": " + CudaText(q));
      }
      ncclResult_t state = ncclSuccess;
      Locked(what, [&] { return ncclCommGetAsyncError(comm_, &state); });
      if (state != ncclSuccess && state != ncclInProgress) {
        Abort(EngineFailure::Kind::kPeer, what, state);
      }
      if (Clock::now() - start > timeout()) Abort(EngineFailure::Kind::kTimeout, what, state);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Runs one NCCL call on comm_ under nccl_mu_, unless the watchdog has
  // aborted the communicator (then comm_ must not be touched again).
  template <typename Call>
  ncclResult_t Locked(const char* what, Call&& call) {
    std::lock_guard<std::timed_mutex> lock(nccl_mu_);
    if (aborted_.load()) {
      broken_engine_ = true;
      throw EngineFailure(EngineFailure::Kind::kTimeout,
                          std::string("Timed out in ") + what +
                              ": communicator aborted by the watchdog (this thread was stuck "
                              "past the deadline)");
    }
    return call();
  }

  [[noreturn]] void Abort(EngineFailure::Kind kind, const char* what, ncclResult_t state) {
    const std::string detail = kind == EngineFailure::Kind::kTimeout
                                   ? "Timed out waiting " + std::to_string(timeout().count()) +
                                         "ms for " + what + "; communicator aborted"
                                   : std::string(what) + ": async error " +
                                         ncclGetErrorString(state) + "; communicator aborted";
    {
      std::lock_guard<std::timed_mutex> lock(nccl_mu_);
      if (!aborted_.exchange(true)) ncclCommAbort(comm_);
    }
    broken_engine_ = true;
    throw EngineFailure(kind, detail);
  }

  // The watchdog thread. The main thread holds nccl_mu_ only for the length
  // of one NCCL call; if it cannot be had within a second, that call is
  // blocked inside NCCL, and ncclCommAbort from another thread is NCCL's way
  // to release it. Either way the main thread never touches comm_ again
  // (Locked checks aborted_ first).
  void AbortFromWatchdog() {
    std::unique_lock<std::timed_mutex> lock(nccl_mu_, std::defer_lock);
    [[maybe_unused]] const bool locked = lock.try_lock_for(std::chrono::seconds(1));
    if (aborted_.exchange(true)) return;
    ncclCommAbort(comm_);
  }

  int device_;
  std::unique_ptr<Comm> helper_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool broken_engine_ = false;
  std::timed_mutex nccl_mu_;          // main thread's NCCL calls vs the watchdog's abort
  std::atomic<bool> aborted_{false};  // comm_ was aborted: never touch it again
  void* scratch_[2] = {nullptr, nullptr};
  std::size_t scratch_bytes_[2] = {0, 0};
};

}  // namespace

std::unique_ptr<Comm> MakeNcclComm(const CommOptions& options, CommSetup setup) {
  const int device = SelectDevice(options);
  if (options.share_gpu) {
    // Several ranks on one GPU: NCCL refuses ("Duplicate GPU detected")
    // unless each rank looks like its own host.
    if (std::getenv("NCCL_HOSTID") == nullptr) {
      ::setenv("NCCL_HOSTID", ("ddp-rank-" + std::to_string(options.rank)).c_str(), 1);
    }
    if (options.rank == 0) {
      std::fprintf(stderr,
                   "[ddp::comm] ranks share GPUs (NCCL_HOSTID per rank, traffic over sockets): "
                   "functional mode, timings are not meaningful\n");
    }
  }
  std::unique_ptr<Comm> helper;
  if (setup.checked) {
    CommSetup h = setup;
    h.backend = "gloo";
    h.checked = false;
    h.trace_entries = 0;  // its exchanges are part of the main communicator's entries
    h.store = launch::PrefixedStore(setup.store, "check");
    helper = MakeGlooComm(options, std::move(h));
  }
  auto store = setup.store;
  auto comm = std::make_unique<NcclComm>(std::move(setup), device, std::move(helper));
  try {
    comm->Init(*store);
  } catch (const EngineFailure& e) {
    throw CommError("nccl init of rank " + std::to_string(options.rank) + " of " +
                    std::to_string(options.world_size) + " on GPU " + std::to_string(device) +
                    " failed: " + e.what());
  } catch (const std::exception& e) {
    throw CommError("nccl rendezvous of rank " + std::to_string(options.rank) + " through " +
                    store->Describe() + " failed: " + e.what());
  }
  return comm;
}

}  // namespace ddp::comm
