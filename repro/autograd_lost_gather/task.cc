#include "repro/autograd_lost_gather/task.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/nn/rng.h"

namespace ddp::autograd_lost_gather {
namespace {

// SplitMix64 finaliser: decorrelates (seed, stream) pairs into one seed.
uint64_t Mix(uint64_t seed, uint64_t stream) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + stream + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

Batch MakeBatch(uint64_t seed, uint64_t stream, int64_t n, const TaskOptions& o) {
  if (n < 0) throw std::invalid_argument("MakeBatch: negative size");
  nn::Rng rng(Mix(seed, stream));
  const double unit = std::sqrt(3.0);  // U(-sqrt 3, sqrt 3) has variance 1
  Batch batch;
  batch.labels.assign(static_cast<std::size_t>(n), 0);
  for (int64_t k = 0; k < n / 2; ++k) batch.labels[static_cast<std::size_t>(k)] = 1;
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates with exact integer draws
    const int64_t j = static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(i + 1));
    std::swap(batch.labels[static_cast<std::size_t>(i)], batch.labels[static_cast<std::size_t>(j)]);
  }
  batch.x.resize(n, o.dim);
  batch.a.resize(n, o.dim);
  batch.b.resize(n, o.dim);
  const double shift = o.separation / 2 / std::sqrt(static_cast<double>(o.dim));
  for (int64_t k = 0; k < n; ++k) {
    const double sign = batch.labels[static_cast<std::size_t>(k)] == 1 ? 1.0 : -1.0;
    for (int d = 0; d < o.dim; ++d) {
      const double x = sign * shift + rng.Uniform(-unit, unit);
      batch.x(k, d) = x;
      batch.a(k, d) = x + o.view_noise * rng.Uniform(-unit, unit);
      batch.b(k, d) = x + o.view_noise * rng.Uniform(-unit, unit);
    }
  }
  return batch;
}

Batch Slice(const Batch& batch, int64_t begin, int64_t count) {
  if (begin < 0 || count < 0 || begin + count > batch.size()) {
    throw std::out_of_range("Slice: rows out of range");
  }
  Batch s;
  s.x = batch.x.middleRows(begin, count);
  s.a = batch.a.middleRows(begin, count);
  s.b = batch.b.middleRows(begin, count);
  s.labels.assign(batch.labels.begin() + begin, batch.labels.begin() + begin + count);
  return s;
}

std::vector<int64_t> Offsets(std::span<const int64_t> counts) {
  std::vector<int64_t> out;
  int64_t at = 0;
  for (int64_t c : counts) {
    out.push_back(at);
    at += c;
  }
  return out;
}

int64_t Total(std::span<const int64_t> counts) {
  int64_t t = 0;
  for (int64_t c : counts) t += c;
  return t;
}

}  // namespace ddp::autograd_lost_gather
