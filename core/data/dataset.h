// The dataset interface: a fixed-length, random-access collection whose
// sample i is a pure function of (seed, i), so every rank that builds the
// same dataset sees the same data without any communication.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "Eigen/Core"

namespace ddp::data {

struct Sample {
  Eigen::VectorXd x;  // features (images: flattened channel-major, C*H*W)
  int label = 0;      // class id in [0, NumClasses())
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t Size() const = 0;
  virtual int FeatureDim() const = 0;
  virtual int NumClasses() const = 0;
  // Throws std::out_of_range unless 0 <= index < Size().
  virtual Sample Get(int64_t index) const = 0;
};

// A materialised batch: row r of `x` is sample `indices[r]`.
struct Batch {
  std::vector<int64_t> indices;
  Eigen::MatrixXd x;  // indices.size() x FeatureDim()
  std::vector<int> labels;
};

Batch Materialize(const Dataset& dataset, std::span<const int64_t> indices);

}  // namespace ddp::data
