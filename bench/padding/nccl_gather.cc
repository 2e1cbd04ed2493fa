#include "bench/padding/nccl_gather.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/launch/store.h"

namespace ddp::bench {
namespace {

void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
  }
}

void Nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
  }
}

std::size_t Size(std::int64_t n) { return static_cast<std::size_t>(n); }

class Device final : public Memory {
 public:
  explicit Device(int device) : device_(device) {
    Cuda(cudaSetDevice(device_), "cudaSetDevice");
    Cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~Device() override { cudaStreamDestroy(stream_); }
  double* Alloc(std::size_t n) override {
    if (n == 0) return nullptr;
    void* p = nullptr;
    Cuda(cudaMalloc(&p, n * sizeof(double)), "cudaMalloc");
    return static_cast<double*>(p);
  }
  void Free(double* p) override { cudaFree(p); }
  void Copy(double* dst, const double* src, std::size_t n) override {
    if (n > 0) {
      Cuda(cudaMemcpyAsync(dst, src, n * sizeof(double), cudaMemcpyDeviceToDevice, stream_),
           "cudaMemcpyAsync");
    }
  }
  void Zero(double* dst, std::size_t n) override {
    if (n > 0) Cuda(cudaMemsetAsync(dst, 0, n * sizeof(double), stream_), "cudaMemsetAsync");
  }
  void Upload(double* dst, const double* host, std::size_t n) override {
    if (n > 0) Cuda(cudaMemcpy(dst, host, n * sizeof(double), cudaMemcpyHostToDevice), "upload");
  }
  void Download(double* host, const double* src, std::size_t n) override {
    if (n > 0) {
      Cuda(cudaMemcpy(host, src, n * sizeof(double), cudaMemcpyDeviceToHost), "download");
    }
  }
  void Sync() override { Cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  cudaStream_t stream() const { return stream_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

class RawNccl {
 public:
  RawNccl(int rank, int world_size, int device) : rank_(rank), world_size_(world_size) {
    Cuda(cudaSetDevice(device), "cudaSetDevice");
    Cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    Cuda(cudaMalloc(&sizes_, sizeof(std::int64_t) * (Size(world_size) + 1)), "cudaMalloc");
  }
  ~RawNccl() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    cudaFree(sizes_);
    cudaStreamDestroy(stream_);
  }
  RawNccl(const RawNccl&) = delete;
  RawNccl& operator=(const RawNccl&) = delete;

  void Init(const ncclUniqueId& id) {
    Nccl(ncclCommInitRank(&comm_, world_size_, id, rank_), "ncclCommInitRank");
  }

  // Every rank's length on the host: an int64 all_gather on the device and a
  // copy back, as the user's sizes tensor and .tolist() do.
  std::vector<std::int64_t> ExchangeSizes(std::int64_t mine) {
    std::int64_t* own = sizes_ + world_size_;
    Cuda(cudaMemcpyAsync(own, &mine, sizeof(mine), cudaMemcpyHostToDevice, stream_), "sizes");
    Nccl(ncclAllGather(own, sizes_, 1, ncclInt64, comm_, stream_), "ncclAllGather (sizes)");
    std::vector<std::int64_t> out(Size(world_size_));
    Cuda(cudaMemcpyAsync(out.data(), sizes_, sizeof(std::int64_t) * out.size(),
                         cudaMemcpyDeviceToHost, stream_),
         "sizes");
    Sync();
    return out;
  }

  void Sync() { Cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }

 private:
  int rank_;
  int world_size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
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
    Nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < nccl_->world_size(); ++r) {
      double* dst = output_.data() + offsets[Size(r)];
      const std::size_t n = Size(sizes[Size(r)]);
      if (method_ == Method::kGroupedBroadcast) {
        Nccl(ncclBroadcast(r == me ? input_.data() : nullptr, dst, n, ncclFloat64, r, comm,
                           stream),
             "ncclBroadcast");
      } else if (r == me) {
        Cuda(cudaMemcpyAsync(dst, input_.data(), n * sizeof(double), cudaMemcpyDeviceToDevice,
                             stream),
             "cudaMemcpyAsync (own share)");
      } else {
        Nccl(ncclSend(input_.data(), Size(sizes[Size(me)]), ncclFloat64, r, comm, stream),
             "ncclSend");
        Nccl(ncclRecv(dst, n, ncclFloat64, r, comm, stream), "ncclRecv");
      }
    }
    Nccl(ncclGroupEnd(), "ncclGroupEnd");
    nccl_->Sync();
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

std::unique_ptr<Memory> DeviceMemory(int device) { return std::make_unique<Device>(device); }

std::shared_ptr<RawNccl> ConnectRawNccl(const launch::RankEnv& env, int device,
                                        std::int64_t timeout_ms) {
  auto store = launch::PrefixedStore(
      launch::OpenStore(env.rdzv, std::chrono::milliseconds(timeout_ms)),
      env.run_id + "/bench_padding_raw_nccl");
  ncclUniqueId id;
  if (env.rank == 0) {
    Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    store->set("id", std::vector<char>(reinterpret_cast<char*>(&id),
                                       reinterpret_cast<char*>(&id) + sizeof(id)));
  } else {
    const std::vector<char> bytes = store->get("id");
    if (bytes.size() != sizeof(id)) throw std::runtime_error("bad NCCL unique id in the store");
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  auto nccl = std::make_shared<RawNccl>(env.rank, env.world_size, device);
  nccl->Init(id);
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
