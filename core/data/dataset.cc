#include "core/data/dataset.h"

namespace ddp::data {

Batch Materialize(const Dataset& dataset, std::span<const int64_t> indices) {
  Batch batch;
  batch.indices.assign(indices.begin(), indices.end());
  batch.x.resize(static_cast<Eigen::Index>(indices.size()), dataset.FeatureDim());
  batch.labels.reserve(indices.size());
  for (size_t r = 0; r < indices.size(); ++r) {
    Sample sample = dataset.Get(indices[r]);
    batch.x.row(static_cast<Eigen::Index>(r)) = sample.x.transpose();
    batch.labels.push_back(sample.label);
  }
  return batch;
}

}  // namespace ddp::data
