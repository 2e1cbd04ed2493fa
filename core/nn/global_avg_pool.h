// Global average pooling: N x C x H x W -> N x C (mean over each H*W plane),
// i.e. adaptive_avg_pool2d(x, 1) followed by flatten.
#pragma once

#include <stdexcept>

#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
class GlobalAvgPool {
 public:
  Matrix<S> Forward(const Tensor4<S>& x) {
    if (x.h * x.w == 0) throw std::invalid_argument("GlobalAvgPool: empty spatial plane");
    n_ = x.n;
    c_ = x.c;
    h_ = x.h;
    w_ = x.w;
    Matrix<S> y(x.n, x.c);
    const Eigen::Index plane = x.PlaneSize();
    for (int n = 0; n < x.n; ++n) {
      for (int c = 0; c < x.c; ++c) {
        y(n, c) = Eigen::Map<const Vector<S>>(x.Plane(n, c), plane).mean();
      }
    }
    return y;
  }

  Tensor4<S> Backward(const Matrix<S>& dy) {
    if (dy.rows() != n_ || dy.cols() != c_) {
      throw std::invalid_argument("GlobalAvgPool::Backward: gradient shape does not match the last Forward");
    }
    Tensor4<S> dx(n_, c_, h_, w_);
    const S scale = S(1) / static_cast<S>(h_ * w_);
    for (int n = 0; n < n_; ++n) {
      for (int c = 0; c < c_; ++c) {
        Eigen::Map<Vector<S>>(dx.Plane(n, c), dx.PlaneSize()).setConstant(dy(n, c) * scale);
      }
    }
    return dx;
  }

 private:
  int n_ = 0, c_ = 0, h_ = 0, w_ = 0;
};

}  // namespace ddp::nn
