#include "bench/padding/nccl_gather.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

#include "core/comm/nccl_engine.h"
#include "core/comm/options.h"
#include "core/device/make_device.h"
#include "core/store/store.h"

namespace ddp::bench {
namespace {

std::size_t Size(std::int64_t n) { return static_cast<std::size_t>(n); }

}  // namespace

// The raw communicator is the Comm API's engine (core/comm/nccl_engine.h):
// non-blocking init, every collective bounded and aborted at its deadline,
// a bounded teardown. The first collective gets the start-up bound: NCCL
// connects inside it.
class RawNccl {
 public:
  RawNccl(int rank, int world_size, int device, std::chrono::milliseconds deadline,
          std::chrono::milliseconds startup)
      : engine_(device, rank, world_size),
        rank_(rank),
        world_size_(world_size),
        deadline_(deadline),
        startup_(startup) {
    engine_.set_teardown_bound(deadline);
    engine_.Cuda(cudaMalloc(&sizes_, sizeof(std::int64_t) * (Size(world_size) + 1)), "cudaMalloc");
  }
  ~RawNccl() {
    if (engine_.Close() != comm::nccl_wait::Closed::kLeft) cudaFree(sizes_);
  }
  RawNccl(const RawNccl&) = delete;
  RawNccl& operator=(const RawNccl&) = delete;

  void Connect(store::Store& store) { engine_.Connect(store, "id", startup_); }

  // Every rank's length on the host: an int64 all_gather on the device and a
  // copy back, as the user's sizes tensor and .tolist() do.
  std::vector<std::int64_t> ExchangeSizes(std::int64_t mine) {
    std::int64_t* own = sizes_ + world_size_;
    // From pageable memory: staged before the call returns, then in stream
    // order ahead of the all_gather.
    engine_.Cuda(cudaMemcpyAsync(own, &mine, sizeof(mine), cudaMemcpyHostToDevice, stream()),
                 "sizes");
    std::vector<std::int64_t> out(Size(world_size_));
    Run(
        "ncclAllGather (sizes)",
        [&] { return ncclAllGather(own, sizes_, 1, ncclInt64, comm(), stream()); },
        [&] {
          engine_.Cuda(cudaMemcpyAsync(out.data(), sizes_, sizeof(std::int64_t) * out.size(),
                                       cudaMemcpyDeviceToHost, stream()),
                       "sizes");
        });
    return out;
  }

  // enqueue() queues NCCL calls on stream(); waits until they are done
  // (copy_back, if any, then runs on the drained stream). Throws
  // comm::EngineFailure past the deadline or on an engine error.
  void Run(const char* what, const std::function<ncclResult_t()>& enqueue,
           const std::function<void()>& copy_back = nullptr) {
    engine_.Run(what, enqueue, copy_back, first_ ? std::max(deadline_, startup_) : deadline_);
    first_ = false;
  }

  void Cuda(cudaError_t e, const char* what) { engine_.Cuda(e, what); }

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  ncclComm_t comm() const { return engine_.comm(); }
  cudaStream_t stream() const { return engine_.stream(); }

 private:
  comm::NcclEngine engine_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds deadline_;
  std::chrono::milliseconds startup_;
  bool first_ = true;
  std::int64_t* sizes_ = nullptr;  // world_size gathered + 1 own
};

namespace {

class NcclGather final : public Gather {
 public:
  NcclGather(Method method, std::shared_ptr<RawNccl> nccl, Memory& memory,
             std::vector<std::int64_t> lengths)
      : method_(method), nccl_(std::move(nccl)), memory_(memory), lengths_(std::move(lengths)) {
    const std::int64_t mine = lengths_[Size(nccl_->rank())];
    std::vector<double> host(Size(mine));
    for (std::int64_t i = 0; i < mine; ++i) host[Size(i)] = Value(nccl_->rank(), i);
    input_ = Buffer(memory_, host.size());
    memory_.Upload(input_.data(), host.data(), host.size());
    std::size_t total = 0;
    for (std::int64_t n : lengths_) total += Size(n);
    output_ = Buffer(memory_, total);
  }

  void Run() override {
    const int me = nccl_->rank();
    const std::vector<std::int64_t> sizes = nccl_->ExchangeSizes(lengths_[Size(me)]);
    std::vector<std::size_t> offsets(sizes.size() + 1, 0);
    for (std::size_t r = 0; r < sizes.size(); ++r) offsets[r + 1] = offsets[r] + Size(sizes[r]);
    if (offsets.back() > output_.size()) throw std::runtime_error("nccl gather: sizes grew");
    ncclComm_t comm = nccl_->comm();
    cudaStream_t stream = nccl_->stream();
    if (method_ == Method::kGroupedSendRecv) {
      // This rank's own share, in stream order before the exchange.
      nccl_->Cuda(cudaMemcpyAsync(output_.data() + offsets[Size(me)], input_.data(),
                                  Size(sizes[Size(me)]) * sizeof(double),
                                  cudaMemcpyDeviceToDevice, stream),
                  "cudaMemcpyAsync (own share)");
    }
    nccl_->Run(method_ == Method::kGroupedBroadcast ? "grouped ncclBroadcast"
                                                     : "grouped ncclSend/ncclRecv",
               [&] {
                 ncclResult_t r = ncclGroupStart();
                 if (r != ncclSuccess) return r;
                 for (int peer = 0; peer < nccl_->world_size(); ++peer) {
                   double* dst = output_.data() + offsets[Size(peer)];
                   const std::size_t n = Size(sizes[Size(peer)]);
                   if (method_ == Method::kGroupedBroadcast) {
                     r = ncclBroadcast(peer == me ? input_.data() : nullptr, dst, n, ncclFloat64,
                                       peer, comm, stream);
                   } else if (peer != me) {
                     r = ncclSend(input_.data(), Size(sizes[Size(me)]), ncclFloat64, peer, comm,
                                  stream);
                     if (r == ncclSuccess || r == ncclInProgress) {
                       r = ncclRecv(dst, n, ncclFloat64, peer, comm, stream);
                     }
                   }
                   if (r != ncclSuccess && r != ncclInProgress) {
                     ncclGroupEnd();
                     return r;
                   }
                 }
                 return ncclGroupEnd();
               });
  }

  std::vector<double> Output() override {
    std::vector<double> host(output_.size());
    memory_.Download(host.data(), output_.data(), host.size());
    return host;
  }

 private:
  Method method_;
  std::shared_ptr<RawNccl> nccl_;
  Memory& memory_;
  std::vector<std::int64_t> lengths_;
  Buffer input_;
  Buffer output_;
};

}  // namespace

int SelectGpu(const launch::RankEnv& env) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    throw std::runtime_error(std::string("--backend nccl needs a GPU, none is usable here (") +
                             (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  if (env.local_rank < count) return env.local_rank;
  if (!env.share_gpu) {
    throw std::runtime_error("rank " + std::to_string(env.rank) + " needs GPU " +
                             std::to_string(env.local_rank) + " but " + std::to_string(count) +
                             " are visible: use fewer ranks or --share_gpu (functional only)");
  }
  return env.local_rank % count;
}

std::unique_ptr<Memory> DeviceMemory(int device) {
  // core/device's CUDA device takes the current GPU (its stream and memory).
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    throw std::runtime_error(std::string("cudaSetDevice: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
  return DeviceMemoryOf(device::MakeDevice<double>(device::Placement::kCuda, "--backend nccl"));
}

std::shared_ptr<RawNccl> ConnectRawNccl(const launch::RankEnv& env, int device,
                                        std::int64_t timeout_ms) {
  const std::chrono::milliseconds deadline(timeout_ms);
  comm::CommOptions options;
  options.backend = "nccl";
  const auto startup = comm::ResolveStartupTimeout(options, deadline);
  // Store operations keep the deadline; waiting for rank 0's id is part of
  // the start-up.
  auto store = store::PrefixedStore(store::OpenStore(env.rdzv, deadline),
                                     env.run_id + "/bench_padding_raw_nccl");
  store->set_timeout(startup);
  auto nccl = std::make_shared<RawNccl>(env.rank, env.world_size, device, deadline, startup);
  nccl->Connect(*store);
  return nccl;
}

std::unique_ptr<Gather> MakeNcclGather(Method m, std::shared_ptr<RawNccl> nccl, Memory& memory,
                                       std::vector<std::int64_t> lengths) {
  if (m != Method::kGroupedBroadcast && m != Method::kGroupedSendRecv) {
    throw std::invalid_argument(std::string("MakeNcclGather: ") + Name(m) +
                                " goes through the Comm API (MakeCommGather)");
  }
  if (lengths.size() != static_cast<std::size_t>(nccl->world_size())) {
    throw std::invalid_argument("MakeNcclGather: lengths do not match the world size");
  }
  return std::make_unique<NcclGather>(m, std::move(nccl), memory, std::move(lengths));
}

}  // namespace ddp::bench
