// Test helpers: random inputs and central finite differences in double.
#pragma once

#include <algorithm>
#include <cmath>

#include "core/nn/rng.h"
#include "core/nn/tensor.h"

namespace ddp::nn::gradcheck {

// Entries ~ N(0, 1) * scale + offset. With min_abs > 0, entries are pushed
// to at least that magnitude (keeps ReLU inputs away from the kink at 0).
inline Matrix<double> RandomMatrix(int rows, int cols, Rng& rng, double scale = 1.0, double offset = 0.0,
                                   double min_abs = 0.0) {
  Matrix<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    double v = rng.Normal() * scale + offset;
    if (std::abs(v) < min_abs) v = v < 0 ? -min_abs : min_abs;
    m.data()[i] = v;
  }
  return m;
}

inline Tensor4<double> RandomTensor(int n, int c, int h, int w, Rng& rng, double scale = 1.0) {
  Tensor4<double> t(n, c, h, w);
  for (Eigen::Index i = 0; i < t.data.size(); ++i) t.data[i] = rng.Normal() * scale;
  return t;
}

// d loss / d data[i] by central differences (loss() re-runs the forward pass).
// Step 1e-5: truncation error ~1e-10 * |f'''| and rounding ~1e-11 * |loss|,
// both far below the 1e-6 relative tolerance the tests assert.
template <typename Loss>
Vector<double> NumericGrad(double* data, Eigen::Index size, Loss loss, double h = 1e-5) {
  Vector<double> g(size);
  for (Eigen::Index i = 0; i < size; ++i) {
    const double saved = data[i];
    data[i] = saved + h;
    const double plus = loss();
    data[i] = saved - h;
    const double minus = loss();
    data[i] = saved;
    g[i] = (plus - minus) / (2 * h);
  }
  return g;
}

// Normwise relative error max_i |a_i - b_i| / max_i |b_i|, b the reference.
template <typename A, typename B>
double RelErr(const A& a, const B& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a.data()[i]) - static_cast<double>(b.data()[i])));
    scale = std::max(scale, std::abs(static_cast<double>(b.data()[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace ddp::nn::gradcheck
