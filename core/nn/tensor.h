// Tensor types of the tiny networks, and their memory layout.
//
//  * Matrix<S>: an N x F batch, one sample per row, row-major. Row-major keeps
//    each sample contiguous, so a slice of samples [a, b) is one contiguous
//    block (what scattering/gathering samples across ranks wants), and the
//    N x C matrix is bit-for-bit the N x C x 1 x 1 tensor below.
//  * Tensor4<S>: an N x C x H x W batch in one flat buffer in PyTorch's default
//    (contiguous NCHW) order: element (n, c, h, w) lives at
//    data[((n * C + c) * H + h) * W + w]. Each (n, c) plane of H * W values is
//    contiguous, and so is each sample.
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ddp::nn {

template <typename S>
using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename S>
using Vector = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// Elementwise view of the same storage (e.g. Eigen::Map<Array<S>> of a plane).
template <typename S>
using Array = Eigen::Array<S, Eigen::Dynamic, 1>;

template <typename S>
struct Tensor4 {
  int n = 0;
  int c = 0;
  int h = 0;
  int w = 0;
  Vector<S> data;

  Tensor4() = default;
  // A zero-filled tensor; throws std::invalid_argument on a negative size.
  Tensor4(int n_in, int c_in, int h_in, int w_in) : n(n_in), c(c_in), h(h_in), w(w_in) {
    if (n < 0 || c < 0 || h < 0 || w < 0) {
      throw std::invalid_argument("Tensor4: negative dimension");
    }
    data = Vector<S>::Zero(Size());
  }

  int64_t Size() const { return int64_t{n} * c * h * w; }
  int64_t PlaneSize() const { return int64_t{h} * w; }
  int64_t Offset(int in, int ic, int ih, int iw) const {
    return ((int64_t{in} * c + ic) * h + ih) * w + iw;
  }
  S& At(int in, int ic, int ih, int iw) { return data[Offset(in, ic, ih, iw)]; }
  const S& At(int in, int ic, int ih, int iw) const { return data[Offset(in, ic, ih, iw)]; }
  // The contiguous H*W plane of sample `in`, channel `ic`.
  S* Plane(int in, int ic) { return data.data() + Offset(in, ic, 0, 0); }
  const S* Plane(int in, int ic) const { return data.data() + Offset(in, ic, 0, 0); }
  bool SameShape(const Tensor4& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
  std::string ShapeString() const {
    return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
           std::to_string(w);
  }
};

// A tensor of t's shape whose values are unspecified, for an output about to
// be written in full (the constructor's zero fill would be one more pass
// over memory).
template <typename S>
Tensor4<S> EmptyLike(const Tensor4<S>& t) {
  Tensor4<S> out;
  out.n = t.n;
  out.c = t.c;
  out.h = t.h;
  out.w = t.w;
  out.data.resize(t.Size());
  return out;
}

// Gives *t the shape of `like`, keeping its storage when the size is the same
// (a layer's saved tensor reused call after call); values unspecified.
template <typename S>
void ReshapeLike(Tensor4<S>* t, const Tensor4<S>& like) {
  t->n = like.n;
  t->c = like.c;
  t->h = like.h;
  t->w = like.w;
  t->data.resize(like.Size());
}

// The N x C matrix as the N x C x 1 x 1 tensor that BatchNorm1d / GroupNorm see.
template <typename S>
Tensor4<S> FromRows(const Matrix<S>& m) {
  Tensor4<S> t(static_cast<int>(m.rows()), static_cast<int>(m.cols()), 1, 1);
  // Row-major N x C and NCHW with H = W = 1 share one layout.
  t.data = Eigen::Map<const Vector<S>>(m.data(), m.size());
  return t;
}

// Flattens each sample (torch.flatten(x, 1)): N x (C*H*W), same memory order.
template <typename S>
Matrix<S> ToRows(const Tensor4<S>& t) {
  const Eigen::Index cols = static_cast<Eigen::Index>(t.c) * t.h * t.w;
  Matrix<S> m(t.n, cols);
  if (t.Size() > 0) m = Eigen::Map<const Matrix<S>>(t.data.data(), t.n, cols);
  return m;
}

}  // namespace ddp::nn
