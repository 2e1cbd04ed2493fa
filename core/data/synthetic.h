// Seeded synthetic datasets of any length (1003 is as good as 1024).
#pragma once

#include <array>
#include <cstdint>

#include "core/data/dataset.h"

namespace ddp::data {

// Binary task: label ~ Bernoulli(positive_fraction); features
// x ~ N(+-separation/2 * u, I) with u = (1, ..., 1)/sqrt(dim), + for label 1.
// The best possible score is u.x (the log-likelihood ratio is monotone in
// it) and its ROC AUC has a closed form, independent of dim and of the class
// prior: AUC = Phi(separation / sqrt(2)).
struct GaussianBinaryConfig {
  int64_t size = 1003;
  int dim = 8;
  // Default: Phi(1.5278 / sqrt 2) = 0.86000 (see BayesAuc).
  double separation = 1.5278;
  double positive_fraction = 0.5;
  uint64_t seed = 0;
};

class GaussianBinary final : public Dataset {
 public:
  explicit GaussianBinary(const GaussianBinaryConfig& config);  // validates
  int64_t Size() const override { return config_.size; }
  int FeatureDim() const override { return config_.dim; }
  int NumClasses() const override { return 2; }
  Sample Get(int64_t index) const override;

  // u.x: the Bayes-optimal score.
  double OracleScore(const Sample& sample) const;
  // Phi(separation / sqrt 2), the AUC of OracleScore on the population.
  static double BayesAuc(double separation);
  // Inverse of BayesAuc (bisection, to 1e-15): the separation for a target
  // AUC in (0.5, 1).
  static double SeparationForAuc(double auc);
  const GaussianBinaryConfig& config() const { return config_; }

 private:
  GaussianBinaryConfig config_;
};

// K-class task: label uniform on [0, K); x ~ N(radius * e_label, I) in
// `dim >= K` dimensions (the dim - K extra coordinates are pure noise).
// Nearest-mean (argmax of the first K coordinates) is Bayes-optimal; its
// accuracy is the 1-D integral BayesAccuracy() =
//   int phi(t - radius) Phi(t)^(K-1) dt.
struct GaussianMulticlassConfig {
  int64_t size = 1003;
  int num_classes = 4;
  int dim = 8;
  double radius = 1.5;
  uint64_t seed = 0;
};

class GaussianMulticlass final : public Dataset {
 public:
  explicit GaussianMulticlass(const GaussianMulticlassConfig& config);
  int64_t Size() const override { return config_.size; }
  int FeatureDim() const override { return config_.dim; }
  int NumClasses() const override { return config_.num_classes; }
  Sample Get(int64_t index) const override;

  // Index of the largest of the first K coordinates.
  int OraclePredict(const Sample& sample) const;
  double BayesAccuracy() const;
  const GaussianMulticlassConfig& config() const { return config_; }

 private:
  GaussianMulticlassConfig config_;
};

// Tiny images, 3 x 8 x 8 (channel-major), 4 classes. Class k draws a +-1
// pattern P_k with zero spatial mean (0: horizontal stripes, 1: vertical
// stripes, 2: checkerboard, 3: top half vs bottom half), and
//   x[c,h,w] = mean[c] + std[c] * (signal * P_k(h,w) + sqrt(1-signal^2) * n),
// n ~ N(0,1) per pixel. Because P_k^2 = 1, every pixel of channel c has mean
// mean[c] and variance std[c]^2 exactly: far from 0/1 by default, so a
// network without (correct) normalisation statistics sees badly scaled input.
struct TinyImagesConfig {
  int64_t size = 1003;
  std::array<double, 3> channel_mean = {3.0, -2.0, 10.0};
  std::array<double, 3> channel_std = {2.0, 0.5, 5.0};
  double signal = 0.15;  // in [0, 1]
  uint64_t seed = 0;
};

class TinyImages final : public Dataset {
 public:
  static constexpr int kChannels = 3;
  static constexpr int kHeight = 8;
  static constexpr int kWidth = 8;
  static constexpr int kClasses = 4;

  explicit TinyImages(const TinyImagesConfig& config);
  int64_t Size() const override { return config_.size; }
  int FeatureDim() const override { return kChannels * kHeight * kWidth; }
  int NumClasses() const override { return kClasses; }
  Sample Get(int64_t index) const override;

  // +-1 pattern of class k at (h, w).
  static double Pattern(int k, int h, int w);
  const TinyImagesConfig& config() const { return config_; }

 private:
  TinyImagesConfig config_;
};

}  // namespace ddp::data
