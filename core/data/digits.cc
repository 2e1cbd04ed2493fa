#include "core/data/digits.h"

#include <sstream>
#include <stdexcept>
#include <string>

#include "core/data/det_random.h"
#include "core/data/torch_randperm.h"

namespace ddp::data {
namespace internal {
// digits/digits.csv, embedded by the genrule //core/data:digits_csv_cc.
extern const char kDigitsCsv[];
}  // namespace internal

namespace {

constexpr uint64_t kDigitsNoiseTag = 0xD161;

struct Table {
  std::vector<std::vector<int>> pixels;
  std::vector<int> labels;
};

// Parses the embedded CSV once (header, then `label,p0..p63` per image).
const Table& Parsed() {
  static const Table table = [] {
    Table t;
    std::istringstream in(internal::kDigitsCsv);
    std::string line;
    std::getline(in, line);  // the newline right after R"digits(
    if (line.empty()) std::getline(in, line);
    if (line.rfind("label,", 0) != 0) throw std::runtime_error("digits.csv: missing header");
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::istringstream row(line);
      std::string cell;
      std::vector<int> values;
      while (std::getline(row, cell, ',')) values.push_back(std::stoi(cell));
      if (values.size() != 65) throw std::runtime_error("digits.csv: a row without 65 values: " + line);
      t.labels.push_back(values[0]);
      t.pixels.emplace_back(values.begin() + 1, values.end());
    }
    if (static_cast<int64_t>(t.labels.size()) != Digits::kImages) {
      throw std::runtime_error("digits.csv: " + std::to_string(t.labels.size()) + " images, expected 1797");
    }
    return t;
  }();
  return table;
}

void CheckImage(int64_t image) {
  if (image < 0 || image >= Digits::kImages) {
    throw std::invalid_argument("digits: image index " + std::to_string(image) + " outside [0, 1797)");
  }
}

}  // namespace

Digits::Digits(DigitsConfig config) : config_(std::move(config)) {
  if (!(config_.noise >= 0)) throw std::invalid_argument("Digits: noise must be >= 0");
  if (config_.indices.empty()) {
    for (int64_t i = 0; i < kImages; ++i) config_.indices.push_back(i);
  }
  for (int64_t i : config_.indices) CheckImage(i);
}

const std::vector<int>& Digits::Pixels(int64_t image) {
  CheckImage(image);
  return Parsed().pixels[image];
}

int Digits::Label(int64_t image) {
  CheckImage(image);
  return Parsed().labels[image];
}

Sample Digits::Get(int64_t index) const {
  if (index < 0 || index >= Size()) {
    throw std::out_of_range("sample index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(Size()) + ")");
  }
  const int64_t image = config_.indices[index];
  const std::vector<int>& px = Pixels(image);
  Sample s;
  s.label = Label(image);
  s.x.resize(FeatureDim());
  if (config_.noise == 0) {
    for (int j = 0; j < FeatureDim(); ++j) s.x[j] = px[j] / 16.0;
    return s;
  }
  DetRng rng(StreamSeed(config_.noise_seed ^ SplitMix64(kDigitsNoiseTag), static_cast<uint64_t>(image)));
  for (int j = 0; j < FeatureDim(); ++j) s.x[j] = px[j] / 16.0 + config_.noise * rng.Normal();
  return s;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> DigitsSplit(int64_t n_val, int64_t seed) {
  if (n_val <= 0 || n_val >= Digits::kImages) {
    throw std::invalid_argument("DigitsSplit: n_val must be in [1, 1796], got " + std::to_string(n_val));
  }
  const std::vector<int64_t> perm = TorchRandperm(Digits::kImages, seed);
  const auto cut = perm.begin() + (Digits::kImages - n_val);
  return {std::vector<int64_t>(perm.begin(), cut), std::vector<int64_t>(cut, perm.end())};
}

}  // namespace ddp::data
