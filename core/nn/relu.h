// ReLU on either tensor type. Backward passes dy where the input was > 0
// (PyTorch's threshold_backward: the gradient at exactly 0 is 0).
#pragma once

#include <array>
#include <stdexcept>

#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
class Relu {
 public:
  Matrix<S> Forward(const Matrix<S>& x) {
    mask_ = (x.array() > S(0)).template cast<S>().matrix();
    return x.cwiseMax(S(0));
  }

  Matrix<S> Backward(const Matrix<S>& dy) {
    if (dy.rows() != mask_.rows() || dy.cols() != mask_.cols()) {
      throw std::invalid_argument("Relu::Backward: gradient shape does not match the last Forward");
    }
    return dy.cwiseProduct(mask_);
  }

  Tensor4<S> Forward(const Tensor4<S>& x) {
    shape_ = {x.n, x.c, x.h, x.w};
    Matrix<S> flat = Forward(ToRows(x));
    Tensor4<S> y = x;
    y.data = Eigen::Map<const Vector<S>>(flat.data(), flat.size());
    return y;
  }

  Tensor4<S> Backward(const Tensor4<S>& dy) {
    if (dy.n != shape_[0] || dy.c != shape_[1] || dy.h != shape_[2] || dy.w != shape_[3]) {
      throw std::invalid_argument("Relu::Backward: gradient shape does not match the last Forward");
    }
    Matrix<S> flat = Backward(ToRows(dy));
    Tensor4<S> dx = dy;
    dx.data = Eigen::Map<const Vector<S>>(flat.data(), flat.size());
    return dx;
  }

 private:
  Matrix<S> mask_;   // 1 where the input was > 0, else 0
  std::array<int, 4> shape_{};  // N, C, H, W of the last Tensor4 input
};

}  // namespace ddp::nn
