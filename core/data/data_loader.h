// A DataLoader over index lists: batching with PyTorch's rules, plus the
// sample/batch filtering that real pipelines do in their collate_fn (and
// that makes ranks run different numbers of steps).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/sampler.h"

namespace ddp::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  // Without a sampler: shuffle with torch.randperm seeded seed + epoch.
  // With a sampler: must stay false (PyTorch raises "sampler option is
  // mutually exclusive with shuffle").
  bool shuffle = false;
  int64_t seed = 0;
  // Drop the last batch when it has fewer than batch_size indices (decided
  // before filtering, as BatchSampler does).
  bool drop_last = false;
  std::shared_ptr<Sampler> sampler;  // optional; shared so SetEpoch reaches it
  // Per-sample filter applied inside each batch (like a collate_fn that drops
  // unreadable samples): keep index i iff keep_sample(i). Empty = keep all.
  std::function<bool(int64_t index)> keep_sample;
  // Whole-batch filter applied after keep_sample: drop the batch unless it
  // returns true. Empty = keep every batch that still has samples.
  std::function<bool(const std::vector<int64_t>& batch)> keep_batch;
  // What to do with a batch the sample filter emptied: yield it (a step with
  // zero samples, which a collective still has to match) or skip it.
  bool yield_empty_batches = false;
};

class DataLoader {
 public:
  // Throws std::invalid_argument with PyTorch's messages:
  //  "sampler option is mutually exclusive with shuffle",
  //  "batch_size should be a positive integer value, but got batch_size=B".
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);

  // len(loader): batches per epoch before any filtering.
  int64_t NumBatches() const;
  // Index lists of the batches of one epoch, after filtering.
  std::vector<std::vector<int64_t>> EpochBatches() const;
  // Sets the epoch of the sampler (the user's or the internal one).
  void SetEpoch(int64_t epoch) { sampler_->SetEpoch(epoch); }

  Batch Load(const std::vector<int64_t>& indices) const {
    return Materialize(*dataset_, indices);
  }
  const Dataset& dataset() const { return *dataset_; }
  const Sampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
};

}  // namespace ddp::data
