// Index samplers. DistributedSampler reproduces
// torch.utils.data.DistributedSampler (PyTorch 1.13) index for index.
#pragma once

#include <cstdint>
#include <vector>

namespace ddp::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of indices one pass yields (len(sampler)).
  virtual int64_t Size() const = 0;
  // The indices of one pass, for the current epoch.
  virtual std::vector<int64_t> Indices() const = 0;
  // Only shuffling samplers change with the epoch; the default ignores it.
  virtual void SetEpoch(int64_t /*epoch*/) {}
};

// 0, 1, ..., n-1.
class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t Size() const override { return n_; }
  std::vector<int64_t> Indices() const override;

 private:
  int64_t n_;
};

// torch.randperm(n) with a generator seeded seed + epoch. (PyTorch's own
// RandomSampler draws its seed from the global generator instead; this one is
// explicit so that runs are reproducible.)
class RandomSampler final : public Sampler {
 public:
  RandomSampler(int64_t n, int64_t seed);
  int64_t Size() const override { return n_; }
  std::vector<int64_t> Indices() const override;
  void SetEpoch(int64_t epoch) override { epoch_ = epoch; }

 private:
  int64_t n_;
  int64_t seed_;
  int64_t epoch_ = 0;
};

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;  // PyTorch's default
  int64_t seed = 0;
  bool drop_last = false;
};

// PyTorch 1.13 semantics:
//  - num_samples = ceil(N / W), or floor(N / W) with drop_last (what
//    ceil((N - W) / W) evaluates to when N % W != 0, including N < W -> 0);
//  - indices = randperm(N, seed + epoch) if shuffle else 0..N-1;
//  - without drop_last, pad to num_samples * W by repeating the list from its
//    start (several times when N < W); with drop_last, truncate;
//  - this rank takes indices[rank :: W].
class DistributedSampler final : public Sampler {
 public:
  // Throws std::invalid_argument: "Invalid rank R, rank should be in the
  // interval [0, W-1]" (PyTorch's message) for rank >= W or rank < 0, and for
  // a negative dataset size.
  DistributedSampler(int64_t dataset_size, const DistributedSamplerOptions& options);

  int64_t Size() const override { return num_samples_; }
  std::vector<int64_t> Indices() const override;
  void SetEpoch(int64_t epoch) override { epoch_ = epoch; }

  int64_t epoch() const { return epoch_; }
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * options_.num_replicas; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

}  // namespace ddp::data
