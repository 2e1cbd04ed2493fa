#include "core/data/data_loader.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddp::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  if (dataset_ == nullptr) throw std::invalid_argument("DataLoader: dataset is null");
  // Same order of checks as torch.utils.data.DataLoader.__init__.
  if (options_.sampler != nullptr && options_.shuffle) {
    throw std::invalid_argument("sampler option is mutually exclusive with shuffle");
  }
  if (options_.batch_size <= 0) {
    throw std::invalid_argument(
        "batch_size should be a positive integer value, but got batch_size=" +
        std::to_string(options_.batch_size));
  }
  if (options_.sampler != nullptr) {
    sampler_ = options_.sampler;
  } else if (options_.shuffle) {
    sampler_ = std::make_shared<RandomSampler>(dataset_->Size(), options_.seed);
  } else {
    sampler_ = std::make_shared<SequentialSampler>(dataset_->Size());
  }
}

int64_t DataLoader::NumBatches() const {
  const int64_t n = sampler_->Size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<std::vector<int64_t>> DataLoader::EpochBatches() const {
  const std::vector<int64_t> indices = sampler_->Indices();
  const int64_t b = options_.batch_size;
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(b)) {
    const size_t end = std::min(indices.size(), start + static_cast<size_t>(b));
    if (options_.drop_last && end - start < static_cast<size_t>(b)) break;
    std::vector<int64_t> batch;
    batch.reserve(end - start);
    for (size_t p = start; p < end; ++p) {
      if (!options_.keep_sample || options_.keep_sample(indices[p])) {
        batch.push_back(indices[p]);
      }
    }
    if (batch.empty() && !options_.yield_empty_batches) continue;
    if (options_.keep_batch && !options_.keep_batch(batch)) continue;
    batches.push_back(std::move(batch));
  }
  return batches;
}

}  // namespace ddp::data
