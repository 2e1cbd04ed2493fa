#include "bench/padding/gather.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ddp::bench {
namespace {

std::size_t Size(std::int64_t n) { return static_cast<std::size_t>(n); }

// This rank's input, filled once.
Buffer MakeInput(Memory& memory, int rank, std::int64_t n) {
  std::vector<double> host(Size(n));
  for (std::int64_t i = 0; i < n; ++i) host[Size(i)] = Value(rank, i);
  Buffer b(memory, Size(n));
  memory.Upload(b.data(), host.data(), host.size());
  return b;
}

class CommGather : public Gather {
 public:
  CommGather(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths,
             std::int64_t input_len, std::size_t output_len)
      : comm_(comm),
        memory_(memory),
        lengths_(std::move(lengths)),
        input_(MakeInput(memory, comm.rank(), input_len)),
        output_(memory, output_len) {}

  std::vector<double> Output() override {
    std::vector<double> host(output_.size());
    memory_.Download(host.data(), output_.data(), host.size());
    return host;
  }

 protected:
  // What users' code does first: every rank's length, as a host list (the
  // NCCL backend stages it through the device, as PyTorch's .tolist() does).
  std::vector<std::int64_t> ExchangeSizes() {
    const std::int64_t mine = lengths_[Size(comm_.rank())];
    return comm_.Allgather<std::int64_t>(std::span<const std::int64_t>(&mine, 1));
  }

  comm::Comm& comm_;
  Memory& memory_;
  std::vector<std::int64_t> lengths_;
  Buffer input_;
  Buffer output_;
};

// (d) The same total bytes as W equal shares: what an equal-size gather
// costs, through either of the engine's gathers.
class FloorAllgather final : public CommGather {
 public:
  FloorAllgather(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths)
      : CommGather(comm, memory, lengths, FloorCount(lengths),
                   Size(FloorCount(lengths)) * lengths.size()) {}

  void Run() override {
    comm_.Allgather(input_.data(), output_.data(), output_.size() / lengths_.size(),
                    comm::DType::kFloat64);
  }
};

// The Gloo allgatherv algorithm for one call on the shared communicator,
// then back to what it was: the *_direct methods use the same connections
// as every other method, so only the algorithm differs between them.
class AlgorithmScope {
 public:
  AlgorithmScope(comm::Comm& comm, comm::GlooAllgathervAlgorithm a)
      : comm_(comm), before_(comm.gloo_allgatherv()) {
    comm_.set_gloo_allgatherv(a);
  }
  ~AlgorithmScope() { comm_.set_gloo_allgatherv(before_); }
  AlgorithmScope(const AlgorithmScope&) = delete;
  AlgorithmScope& operator=(const AlgorithmScope&) = delete;

 private:
  comm::Comm& comm_;
  comm::GlooAllgathervAlgorithm before_;
};

comm::GlooAllgathervAlgorithm AlgorithmOf(Method m) {
  return IsDirect(m) ? comm::GlooAllgathervAlgorithm::kDirect
                     : comm::GlooAllgathervAlgorithm::kRing;
}

class FloorAllgatherv final : public CommGather {
 public:
  FloorAllgatherv(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths,
                  comm::GlooAllgathervAlgorithm algorithm)
      : CommGather(comm, memory, lengths, FloorCount(lengths),
                   Size(FloorCount(lengths)) * lengths.size()),
        counts_(lengths_.size(), Size(FloorCount(lengths_))),
        algorithm_(algorithm) {}

  void Run() override {
    const AlgorithmScope scope(comm_, algorithm_);
    comm_.Allgatherv(input_.data(), counts_[0], output_.data(), counts_, comm::DType::kFloat64);
  }

 private:
  std::vector<std::size_t> counts_;
  comm::GlooAllgathervAlgorithm algorithm_;
};

// torchmetrics' gather_all_tensors: sizes, pad to the longest (a new,
// zero-filled tensor), one equal-count all_gather, then cut each rank's
// share back to its length (here copied into one compact output, which is
// what the caller's torch.cat produces).
class PadGatherTrim final : public CommGather {
 public:
  PadGatherTrim(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths)
      : CommGather(comm, memory, lengths, lengths[Size(comm.rank())],
                   Size(Sum(lengths))),
        padded_(memory, Size(Max(lengths))),
        gathered_(memory, Size(Max(lengths)) * lengths.size()) {}

  void Run() override {
    const std::vector<std::int64_t> sizes = ExchangeSizes();
    const std::size_t max = Size(*std::max_element(sizes.begin(), sizes.end()));
    const std::size_t mine = Size(sizes[Size(comm_.rank())]);
    if (max > padded_.size()) throw std::runtime_error("pad_gather_trim: sizes grew");
    memory_.BeginSpan();
    memory_.Pad(padded_.data(), input_.data(), mine, max);
    memory_.EndSpan();
    memory_.Sync();
    comm_.Allgather(padded_.data(), gathered_.data(), max, comm::DType::kFloat64);
    memory_.BeginSpan();
    memory_.Trim(output_.data(), gathered_.data(), sizes, max);
    memory_.EndSpan();
    memory_.Sync();
  }

 private:
  static std::int64_t Sum(const std::vector<std::int64_t>& v) {
    std::int64_t s = 0;
    for (std::int64_t x : v) s += x;
    return s;
  }
  static std::int64_t Max(const std::vector<std::int64_t>& v) {
    return *std::max_element(v.begin(), v.end());
  }

  Buffer padded_;
  Buffer gathered_;
};

std::size_t Total(const std::vector<std::int64_t>& v) {
  std::size_t s = 0;
  for (std::int64_t x : v) s += Size(x);
  return s;
}

class Allgatherv final : public CommGather {
 public:
  Allgatherv(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths)
      : CommGather(comm, memory, lengths, lengths[Size(comm.rank())], Total(lengths)) {}

  void Run() override {
    const std::vector<std::int64_t> sizes = ExchangeSizes();
    std::vector<std::size_t> counts(sizes.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      counts[r] = Size(sizes[r]);
      total += counts[r];
    }
    if (total > output_.size()) throw std::runtime_error("allgatherv: sizes grew");
    comm_.Allgatherv(input_.data(), counts[Size(comm_.rank())], output_.data(), counts,
                     comm::DType::kFloat64);
  }
};

// (b') No sizes exchange: every rank already knows every count, as when the
// counts follow from the sharding (a DistributedSampler without padding
// gives rank r exactly len(range(r, N, W)) samples). One collective, the
// same one the floor_allgatherv makes, only with unequal counts.
class KnownCounts final : public CommGather {
 public:
  KnownCounts(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths,
              comm::GlooAllgathervAlgorithm algorithm)
      : CommGather(comm, memory, lengths, lengths[Size(comm.rank())], Total(lengths)),
        algorithm_(algorithm) {
    for (std::int64_t n : lengths_) counts_.push_back(Size(n));
  }

  void Run() override {
    const AlgorithmScope scope(comm_, algorithm_);
    comm_.Allgatherv(input_.data(), counts_[Size(comm_.rank())], output_.data(), counts_,
                     comm::DType::kFloat64);
  }

 private:
  std::vector<std::size_t> counts_;
  comm::GlooAllgathervAlgorithm algorithm_;
};

// (e) The sizes ride in the same collective as the data: one all_gather of
// blocks of 1 + bound elements, the first holding the block's length, when
// every rank knows a bound on every share (here the tightest one, the
// longest share; e.g. a shard's size before data-dependent filtering). The
// padded block is allocated and zeroed once (its tail is never read), then
// each share is trimmed into one compact output. Lengths in a float64 are
// exact below 2^53.
class BoundedPad final : public CommGather {
 public:
  BoundedPad(comm::Comm& comm, Memory& memory, std::vector<std::int64_t> lengths)
      : CommGather(comm, memory, lengths, lengths[Size(comm.rank())], Total(lengths)),
        bound_(Size(*std::max_element(lengths_.begin(), lengths_.end()))),
        block_(memory, bound_ + 1),
        gathered_(memory, (bound_ + 1) * lengths_.size()),
        headers_(lengths_.size()),
        counts_(lengths_.size()) {
    memory_.Zero(block_.data(), block_.size());
    memory_.Sync();
  }

  void Run() override {
    const std::size_t mine = input_.size();
    const double header = static_cast<double>(mine);
    memory_.Upload(block_.data(), &header, 1);
    memory_.BeginSpan();
    memory_.Copy(block_.data() + 1, input_.data(), mine);
    memory_.EndSpan();
    memory_.Sync();
    comm_.Allgather(block_.data(), gathered_.data(), block_.size(), comm::DType::kFloat64);
    const std::size_t stride = block_.size();
    for (std::size_t r = 0; r < headers_.size(); ++r) {
      memory_.Download(&headers_[r], gathered_.data() + r * stride, 1);
    }
    std::size_t total = 0;
    for (std::size_t r = 0; r < headers_.size(); ++r) {
      const std::size_t n = static_cast<std::size_t>(headers_[r]);
      if (n > bound_ || total + n > output_.size()) {
        throw std::runtime_error("bounded_pad: a share exceeds the bound");
      }
      counts_[r] = static_cast<std::int64_t>(n);
      total += n;
    }
    // Each block's values start after its header.
    memory_.BeginSpan();
    memory_.Trim(output_.data(), gathered_.data() + 1, counts_, stride);
    memory_.EndSpan();
    memory_.Sync();
  }

 private:
  std::size_t bound_;
  Buffer block_;
  Buffer gathered_;
  std::vector<double> headers_;
  std::vector<std::int64_t> counts_;
};

}  // namespace

std::vector<double> Expected(Method m, std::span<const std::int64_t> lengths) {
  std::vector<double> out;
  const std::int64_t floor_count = FloorCount(lengths);
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const std::int64_t n = IsFloor(m) ? floor_count : lengths[r];
    for (std::int64_t i = 0; i < n; ++i) out.push_back(Value(static_cast<int>(r), i));
  }
  return out;
}

std::unique_ptr<Gather> MakeCommGather(Method m, comm::Comm& comm, Memory& memory,
                                       std::vector<std::int64_t> lengths) {
  if (lengths.size() != static_cast<std::size_t>(comm.world_size())) {
    throw std::invalid_argument("MakeCommGather: " + std::to_string(lengths.size()) +
                                " lengths for world size " +
                                std::to_string(comm.world_size()));
  }
  switch (m) {
    case Method::kFloorAllgather:
      return std::make_unique<FloorAllgather>(comm, memory, std::move(lengths));
    case Method::kFloorAllgatherv:
    case Method::kFloorAllgathervDirect:
      return std::make_unique<FloorAllgatherv>(comm, memory, std::move(lengths), AlgorithmOf(m));
    case Method::kKnownCounts:
    case Method::kKnownCountsDirect:
      return std::make_unique<KnownCounts>(comm, memory, std::move(lengths), AlgorithmOf(m));
    case Method::kBoundedPad:
      return std::make_unique<BoundedPad>(comm, memory, std::move(lengths));
    case Method::kPadGatherTrim:
      return std::make_unique<PadGatherTrim>(comm, memory, std::move(lengths));
    case Method::kAllgatherv:
      return std::make_unique<Allgatherv>(comm, memory, std::move(lengths));
    case Method::kGroupedBroadcast:
    case Method::kGroupedSendRecv:
      break;
  }
  throw std::invalid_argument(std::string("MakeCommGather: ") + Name(m) +
                              " exists only on raw NCCL (nccl_gather.h)");
}

}  // namespace ddp::bench
