#include "core/data/sampler.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include "core/data/torch_randperm.h"

namespace ddp::data {
namespace {

void CheckLength(int64_t n, const char* who) {
  if (n < 0) {
    throw std::invalid_argument(std::string(who) + ": dataset size must be >= 0, got " +
                                std::to_string(n));
  }
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), int64_t{0});
  return r;
}

}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) { CheckLength(n, "SequentialSampler"); }

std::vector<int64_t> SequentialSampler::Indices() const { return Iota(n_); }

RandomSampler::RandomSampler(int64_t n, int64_t seed) : n_(n), seed_(seed) {
  CheckLength(n, "RandomSampler");
}

std::vector<int64_t> RandomSampler::Indices() const { return TorchRandperm(n_, seed_, epoch_); }

DistributedSampler::DistributedSampler(int64_t dataset_size,
                                       const DistributedSamplerOptions& options)
    : dataset_size_(dataset_size), options_(options) {
  const int64_t w = options.num_replicas;
  if (options.rank >= w || options.rank < 0) {
    throw std::invalid_argument("Invalid rank " + std::to_string(options.rank) +
                                ", rank should be in the interval [0, " +
                                std::to_string(w - 1) + "]");
  }
  CheckLength(dataset_size, "DistributedSampler");
  // PyTorch: math.ceil((N - W) / W) when drop_last and N % W != 0, which is
  // floor(N / W) for every N >= 0 (the float division is exact enough for any
  // N that fits in memory, N < 2^53); otherwise math.ceil(N / W).
  if (options.drop_last && dataset_size % w != 0) {
    num_samples_ = dataset_size / w;
  } else {
    num_samples_ = dataset_size / w + (dataset_size % w != 0 ? 1 : 0);
  }
}

std::vector<int64_t> DistributedSampler::Indices() const {
  const std::vector<int64_t> order = options_.shuffle
                                         ? TorchRandperm(dataset_size_, options_.seed, epoch_)
                                         : Iota(dataset_size_);
  const int64_t w = options_.num_replicas;
  // Position p of the padded (or truncated) list is order[p % N]: padding
  // repeats the list from its start, as often as needed. total_size > N only
  // without drop_last, and then N > 0 (N = 0 gives total_size 0).
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t p = options_.rank; p < total_size(); p += w) {
    mine.push_back(order[static_cast<size_t>(p % dataset_size_)]);
  }
  return mine;
}

}  // namespace ddp::data
