#include "core/data/synthetic.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/data/det_random.h"

namespace ddp::data {
namespace {

// Distinct stream families so that two datasets built with the same seed do
// not share noise.
constexpr uint64_t kBinaryTag = 0xB1;
constexpr uint64_t kMulticlassTag = 0x3C;
constexpr uint64_t kImagesTag = 0x1A;

void CheckIndex(int64_t index, int64_t size) {
  if (index < 0 || index >= size) {
    throw std::out_of_range("sample index " + std::to_string(index) +
                            " out of range [0, " + std::to_string(size) + ")");
  }
}

void CheckSize(int64_t size) {
  if (size < 0) {
    throw std::invalid_argument("dataset size must be >= 0, got " + std::to_string(size));
  }
}

DetRng SampleRng(uint64_t seed, uint64_t tag, int64_t index) {
  return DetRng(StreamSeed(seed ^ SplitMix64(tag), static_cast<uint64_t>(index)));
}

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

GaussianBinary::GaussianBinary(const GaussianBinaryConfig& config) : config_(config) {
  CheckSize(config.size);
  if (config.dim < 1) throw std::invalid_argument("GaussianBinary: dim must be >= 1");
  if (!(config.separation >= 0.0) || !std::isfinite(config.separation)) {
    throw std::invalid_argument("GaussianBinary: separation must be finite and >= 0");
  }
  if (!(config.positive_fraction > 0.0 && config.positive_fraction < 1.0)) {
    throw std::invalid_argument("GaussianBinary: positive_fraction must be in (0, 1)");
  }
}

Sample GaussianBinary::Get(int64_t index) const {
  CheckIndex(index, config_.size);
  DetRng rng = SampleRng(config_.seed, kBinaryTag, index);
  Sample sample;
  sample.label = rng.Uniform() < config_.positive_fraction ? 1 : 0;
  const double offset = (sample.label == 1 ? 0.5 : -0.5) * config_.separation /
                        std::sqrt(static_cast<double>(config_.dim));
  sample.x.resize(config_.dim);
  for (int j = 0; j < config_.dim; ++j) sample.x[j] = offset + rng.Normal();
  return sample;
}

double GaussianBinary::OracleScore(const Sample& sample) const {
  return sample.x.sum() / std::sqrt(static_cast<double>(config_.dim));
}

double GaussianBinary::BayesAuc(double separation) {
  // u.x ~ N(+-separation/2, 1): P(s_pos > s_neg) = Phi(separation / sqrt 2).
  return NormalCdf(separation / std::sqrt(2.0));
}

double GaussianBinary::SeparationForAuc(double auc) {
  if (!(auc > 0.5 && auc < 1.0)) {
    throw std::invalid_argument("SeparationForAuc: auc must be in (0.5, 1)");
  }
  double lo = 0.0, hi = 80.0;  // BayesAuc(80) rounds to 1
  for (int it = 0; it < 200 && hi - lo > 1e-15; ++it) {
    const double mid = 0.5 * (lo + hi);
    (BayesAuc(mid) < auc ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

GaussianMulticlass::GaussianMulticlass(const GaussianMulticlassConfig& config)
    : config_(config) {
  CheckSize(config.size);
  if (config.num_classes < 2) {
    throw std::invalid_argument("GaussianMulticlass: num_classes must be >= 2");
  }
  if (config.dim < config.num_classes) {
    throw std::invalid_argument("GaussianMulticlass: dim must be >= num_classes");
  }
  if (!(config.radius >= 0.0) || !std::isfinite(config.radius)) {
    throw std::invalid_argument("GaussianMulticlass: radius must be finite and >= 0");
  }
}

Sample GaussianMulticlass::Get(int64_t index) const {
  CheckIndex(index, config_.size);
  DetRng rng = SampleRng(config_.seed, kMulticlassTag, index);
  Sample sample;
  sample.label = static_cast<int>(rng.Below(static_cast<uint64_t>(config_.num_classes)));
  sample.x.resize(config_.dim);
  for (int j = 0; j < config_.dim; ++j) sample.x[j] = rng.Normal();
  sample.x[sample.label] += config_.radius;
  return sample;
}

int GaussianMulticlass::OraclePredict(const Sample& sample) const {
  int best = 0;
  for (int k = 1; k < config_.num_classes; ++k) {
    if (sample.x[k] > sample.x[best]) best = k;
  }
  return best;
}

double GaussianMulticlass::BayesAccuracy() const {
  // Simpson's rule on [radius - 12, radius + 12]; the integrand is smooth and
  // negligible outside, so 24000 panels give ~1e-12 accuracy.
  const double r = config_.radius;
  const int k = config_.num_classes;
  const int panels = 24000;
  const double a = r - 12.0, b = r + 12.0, h = (b - a) / panels;
  auto f = [&](double t) {
    const double phi = std::exp(-0.5 * (t - r) * (t - r)) / std::sqrt(2.0 * M_PI);
    return phi * std::pow(NormalCdf(t), k - 1);
  };
  double sum = f(a) + f(b);
  for (int i = 1; i < panels; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * f(a + i * h);
  return sum * h / 3.0;
}

TinyImages::TinyImages(const TinyImagesConfig& config) : config_(config) {
  CheckSize(config.size);
  if (!(config.signal >= 0.0 && config.signal <= 1.0)) {
    throw std::invalid_argument("TinyImages: signal must be in [0, 1]");
  }
  for (double s : config.channel_std) {
    if (!(s > 0.0) || !std::isfinite(s)) {
      throw std::invalid_argument("TinyImages: channel_std must be finite and > 0");
    }
  }
}

double TinyImages::Pattern(int k, int h, int w) {
  switch (k) {
    case 0: return h % 2 == 0 ? 1.0 : -1.0;
    case 1: return w % 2 == 0 ? 1.0 : -1.0;
    case 2: return (h + w) % 2 == 0 ? 1.0 : -1.0;
    case 3: return h < kHeight / 2 ? 1.0 : -1.0;
    default: throw std::out_of_range("TinyImages::Pattern: class out of range");
  }
}

Sample TinyImages::Get(int64_t index) const {
  CheckIndex(index, config_.size);
  DetRng rng = SampleRng(config_.seed, kImagesTag, index);
  Sample sample;
  sample.label = static_cast<int>(rng.Below(kClasses));
  const double noise_scale = std::sqrt(1.0 - config_.signal * config_.signal);
  sample.x.resize(FeatureDim());
  int j = 0;
  for (int c = 0; c < kChannels; ++c) {
    for (int h = 0; h < kHeight; ++h) {
      for (int w = 0; w < kWidth; ++w, ++j) {
        const double z = config_.signal * Pattern(sample.label, h, w) +
                         noise_scale * rng.Normal();
        sample.x[j] = config_.channel_mean[c] + config_.channel_std[c] * z;
      }
    }
  }
  return sample;
}

}  // namespace ddp::data
