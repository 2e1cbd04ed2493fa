// The UCI optical digits (scikit-learn's `load_digits`: 1797 handwritten
// digits, 8x8 pixels, counts 0-16; CC BY 4.0, source and licence in
// digits/README.md), compiled into the library from digits/digits.csv, so a
// binary needs no data file at run time.
//
// A Digits dataset is a subset of the 1797 images (by index, scikit-learn's
// order) with optional Gaussian pixel noise: pixel = count / 16 + noise * z,
// z ~ N(0, 1) drawn from the stream of (noise_seed, original image index),
// so an image gets the same noise in every subset and on every platform
// (det_random.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/data/dataset.h"

namespace ddp::data {

struct DigitsConfig {
  std::vector<int64_t> indices;  // images of the subset, in order; empty: all 1797
  double noise = 0;              // pixel noise sd (pixels are in [0, 1])
  uint64_t noise_seed = 0;
};

class Digits final : public Dataset {
 public:
  static constexpr int kHeight = 8;
  static constexpr int kWidth = 8;
  static constexpr int kClasses = 10;
  static constexpr int64_t kImages = 1797;

  // Throws std::invalid_argument for an index outside [0, 1797) or noise < 0.
  explicit Digits(DigitsConfig config);
  int64_t Size() const override { return static_cast<int64_t>(config_.indices.size()); }
  int FeatureDim() const override { return kHeight * kWidth; }
  int NumClasses() const override { return kClasses; }
  Sample Get(int64_t index) const override;

  // The clean image (pixel counts 0-16, row by row) and label of one of the
  // 1797 images.
  static const std::vector<int>& Pixels(int64_t image);
  static int Label(int64_t image);

 private:
  DigitsConfig config_;
};

// A fixed split of the 1797 images: torch.randperm(1797) under `seed`
// (TorchRandperm), the first 1797 - n_val for training, the rest for
// validation. Throws std::invalid_argument unless 0 < n_val < 1797.
std::pair<std::vector<int64_t>, std::vector<int64_t>> DigitsSplit(int64_t n_val, int64_t seed);

}  // namespace ddp::data
