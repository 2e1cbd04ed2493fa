#include "core/comm/nccl_comm.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/comm/gloo_comm.h"
#include "core/comm/nccl_engine.h"

namespace ddp::comm {
namespace {

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

// Whether CUDA made this process an MPS client, appended as "<pid> mps=0|1"
// to $DDP_MPS_REPORT when the launcher started a daemon (launch/mps.h counts
// the lines); a rank that should have attached and did not says so.
bool IsMpsClient(int device) {
  int mps = 0;
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device) != cudaSuccess) mps = 0;
  if (const char* report = std::getenv("DDP_MPS_REPORT")) {
    const std::string line = std::to_string(::getpid()) + " mps=" + (mps != 0 ? "1" : "0") + "\n";
    const int fd = ::open(report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const ssize_t n = ::write(fd, line.data(), line.size());  // one short write: atomic with O_APPEND
      (void)n;
      ::close(fd);
    }
  }
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  if (mps == 0 && pipe != nullptr) {
    std::fprintf(stderr,
                 "[ddp::comm] pid %d is not a CUDA MPS client although CUDA_MPS_PIPE_DIRECTORY=%s: its "
                 "kernels are time-sliced with the other ranks'\n",
                 static_cast<int>(::getpid()), pipe);
  }
  return mps != 0;
}

class NcclComm final : public Comm {
 public:
  NcclComm(CommSetup setup, int device, std::unique_ptr<Comm> helper)
      : Comm(setup),
        engine_(std::make_unique<NcclEngine>(device, setup.rank, setup.world_size)),
        helper_(std::move(helper)) {
    engine_->set_teardown_bound(setup.timeout);
  }

  ~NcclComm() override {
    StopWatchdog();  // no abort hook may run from here on
    // Finalize or abort before the staging memory goes; left with a finalize
    // still running, the memory stays too (NcclEngine::Close).
    if (engine_->Close() == nccl_wait::Closed::kLeft) return;
    for (void* p : scratch_) {
      if (p != nullptr) cudaFree(p);
    }
  }

  StagedCopies staged_copies() const override { return staged_; }

  // Rendezvous (unique id through the store, bounded by the store's
  // timeout: the start-up bound) and non-blocking init, bounded by
  // `startup`.
  void Init(store::Store& store, std::chrono::milliseconds startup) {
    engine_->Connect(store, "nccl/unique_id", startup);
  }

 protected:
  void EngineAllgather(const void* send, void* recv, std::size_t count, DType dtype,
                       uint32_t) override {
    const std::size_t b = count * SizeOf(dtype);
    Staging st(this);
    const void* s = st.In(send, b, 0);
    void* d = st.Out(recv, b * static_cast<std::size_t>(world_size()), 1);
    Launch([&] { return ncclAllGather(s, d, count, NcclType(dtype), comm(), stream()); },
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
                              NcclType(dtype), root, comm(), stream());
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
    Launch(
        [&] { return ncclAllReduce(d, d, count, NcclType(dtype), NcclOp(op), comm(), stream()); },
        "ncclAllReduce", st);
  }

  void EngineBroadcast(void* data, std::size_t count, DType dtype, int root, uint32_t) override {
    Staging st(this);
    void* d = st.InOut(data, count * SizeOf(dtype), 0);
    Launch([&] { return ncclBroadcast(d, d, count, NcclType(dtype), root, comm(), stream()); },
           "ncclBroadcast", st);
  }

  void EngineReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                           uint32_t) override {
    const std::size_t b = recv_count * SizeOf(dtype);
    Staging st(this);
    const void* s = st.In(send, b * static_cast<std::size_t>(world_size()), 0);
    void* d = st.Out(recv, b, 1);
    Launch([&] {
      return ncclReduceScatter(s, d, recv_count, NcclType(dtype), ncclSum, comm(), stream());
    },
           "ncclReduceScatter", st);
  }

  void EngineBarrier(uint32_t) override {
    // As PyTorch does: an allreduce of one element on the device.
    Staging st(this);
    int32_t one = 1;
    void* d = st.InOut(&one, sizeof(one), 0);
    Launch([&] { return ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comm(), stream()); },
           "ncclAllReduce (barrier)", st);
  }

  // The watchdog's last resort when this rank's thread is stuck past the
  // deadline: abort the communicator from the watchdog thread.
  std::function<void()> WatchdogAbortHook() override {
    return [this] { engine_->AbortFromWatchdog(); };
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
  ncclComm_t comm() const { return engine_->comm(); }
  cudaStream_t stream() const { return engine_->stream(); }

  // Host buffers are copied through device scratch memory (one slot per
  // role); device buffers are used as they are. Copies in go on the
  // communicator's stream ahead of the collective; copies out are queued by
  // CopyBack only once the collective has drained the stream
  // (nccl_wait::Collective).
  class Staging {
   public:
    explicit Staging(NcclComm* c) : c_(c) {}
    const void* In(const void* p, std::size_t bytes, int slot) {
      if (bytes == 0 || IsDevice(p)) return p;
      void* d = c_->Scratch(slot, bytes);
      c_->engine_->Cuda(
          cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, c_->stream()), "cudaMemcpyAsync");
      ++c_->staged_.h2d_calls;
      c_->staged_.h2d_bytes += static_cast<int64_t>(bytes);
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
    // Empty when nothing is staged out.
    std::function<void()> CopyBack() {
      if (back_.empty()) return nullptr;
      return [this] {
        for (const auto& b : back_) {
          c_->engine_->Cuda(cudaMemcpyAsync(b.host, b.dev, b.bytes, cudaMemcpyDeviceToHost,
                                            c_->stream()),
                            "cudaMemcpyAsync");
          ++c_->staged_.d2h_calls;
          c_->staged_.d2h_bytes += static_cast<int64_t>(b.bytes);
        }
      };
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
      engine_->Cuda(cudaMalloc(&scratch_[slot], bytes), "cudaMalloc (staging)");
      scratch_bytes_[slot] = bytes;
    }
    return scratch_[slot];
  }

  // Enqueue, wait for the communicator and the stream (bounded by this
  // call's deadline: the start-up bound for the first collective), copy
  // staged results back, check again (NcclEngine::Run).
  template <typename Enqueue>
  void Launch(Enqueue&& enqueue, const char* what, Staging& st) {
    engine_->Run(what, enqueue, st.CopyBack(), call_deadline());
  }

  std::unique_ptr<NcclEngine> engine_;
  std::unique_ptr<Comm> helper_;
  void* scratch_[2] = {nullptr, nullptr};
  std::size_t scratch_bytes_[2] = {0, 0};
  StagedCopies staged_;  // Staging's copies, counted as they are queued
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
    const bool mps = IsMpsClient(device);
    if (options.rank == 0) {
      std::fprintf(stderr,
                   "[ddp::comm] ranks share GPUs (NCCL_HOSTID per rank, traffic over sockets; CUDA MPS client: %s): "
                   "functional mode, timings are not meaningful\n",
                   mps ? "yes" : "no");
    }
  }
  std::unique_ptr<Comm> helper;
  if (setup.checked) {
    CommSetup h = setup;
    h.backend = "gloo";
    h.checked = false;
    h.trace_entries = 0;  // its exchanges are part of the main communicator's entries
    h.store = store::PrefixedStore(setup.store, "check");
    helper = MakeGlooComm(options, std::move(h));
  }
  setup.lazy_connect = true;  // NCCL connects its peers inside the first collective
  auto store = setup.store;
  const auto startup = setup.startup_timeout;
  std::unique_ptr<NcclComm> comm;
  try {
    comm = std::make_unique<NcclComm>(std::move(setup), device, std::move(helper));
    comm->Init(*store, startup);
  } catch (const EngineFailure& e) {
    // The message starts with the phase: "rendezvous" or "init".
    throw CommError("nccl start-up of rank " + std::to_string(options.rank) + " of " +
                    std::to_string(options.world_size) + " on GPU " + std::to_string(device) +
                    " failed (start-up bound " + std::to_string(startup.count()) +
                    " ms) in " + e.what());
  }
  return comm;
}

}  // namespace ddp::comm
