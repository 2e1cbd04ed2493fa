// What the kernel tests compare with, and how: normwise relative error
// max|got - ref| / max|ref| (core/nn's metric), below 1e-5 for float and
// 1e-12 for double. A NaN in `got` (an output element a kernel never wrote:
// outputs are poisoned with NaN first) makes the error infinite.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/nn/rng.h"
#include "core/nn/tensor.h"

namespace ddp::cuda::testing {

template <typename T>
constexpr double kTolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <typename T>
int64_t CountNaN(std::span<const T> v) {
  int64_t n = 0;
  for (T x : v) n += std::isnan(x) ? 1 : 0;
  return n;
}

template <typename T>
double RelError(std::span<const T> got, std::span<const T> ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(ref[i])) return std::numeric_limits<double>::infinity();
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - static_cast<double>(ref[i])));
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

template <typename T>
double RelError(const std::vector<T>& got, const nn::Vector<T>& ref) {
  return RelError<T>(std::span<const T>(got), std::span<const T>(ref.data(), static_cast<std::size_t>(ref.size())));
}

template <typename T>
std::vector<T> ToStd(const nn::Vector<T>& v) {
  return std::vector<T>(v.data(), v.data() + v.size());
}

// Uniform in [lo, hi), never exactly zero (the issue asks for non-zero inputs).
template <typename T>
std::vector<T> RandomNonZero(std::size_t n, uint64_t seed, double lo, double hi) {
  nn::Rng rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    do {
      x = static_cast<T>(rng.Uniform(lo, hi));
    } while (x == T(0));
  }
  return v;
}

// An N x C x H x W tensor whose channel c is centred on 1 + c (distinct,
// non-zero means) with spread `spread`.
template <typename T>
nn::Tensor4<T> RandomTensor(int n, int c, int h, int w, uint64_t seed, double spread = 1.0) {
  nn::Tensor4<T> t(n, c, h, w);
  nn::Rng rng(seed);
  for (int in = 0; in < n; ++in) {
    for (int ic = 0; ic < c; ++ic) {
      T* p = t.Plane(in, ic);
      for (int64_t k = 0; k < t.PlaneSize(); ++k) {
        do {
          p[k] = static_cast<T>(1.0 + ic + rng.Uniform(-spread, spread));
        } while (p[k] == T(0));
      }
    }
  }
  return t;
}

}  // namespace ddp::cuda::testing
