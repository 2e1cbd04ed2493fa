// Fully connected layer: y = x W^T + b, with W stored out x in (PyTorch's
// nn.Linear layout, so its weights load unchanged).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/nn/param.h"
#include "core/nn/rng.h"
#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
class Linear {
 public:
  Linear(int in_features, int out_features, bool bias = true)
      : in_(in_features), out_(out_features), has_bias_(bias), weight_(out_features, in_features),
        bias_(1, bias ? out_features : 0) {
    if (in_features <= 0 || out_features <= 0) throw std::invalid_argument("Linear: sizes must be > 0");
  }

  // PyTorch's default scheme: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)).
  void Init(Rng& rng) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_));
    for (Eigen::Index i = 0; i < weight_.value.size(); ++i) {
      weight_.value.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
    }
    for (Eigen::Index i = 0; i < bias_.value.size(); ++i) {
      bias_.value.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
    }
  }

  // x: N x in. Keeps x for Backward.
  Matrix<S> Forward(const Matrix<S>& x) {
    if (x.cols() != in_) {
      throw std::invalid_argument("Linear::Forward: input has " + std::to_string(x.cols()) +
                                  " features, expected " + std::to_string(in_));
    }
    input_ = x;
    Matrix<S> y = x * weight_.value.transpose();
    if (has_bias_) y.rowwise() += bias_.value.row(0);
    return y;
  }

  // dy: N x out. Accumulates dW += dy^T x and db += sum_n dy; returns dx = dy W.
  Matrix<S> Backward(const Matrix<S>& dy) {
    if (dy.rows() != input_.rows() || dy.cols() != out_) {
      throw std::invalid_argument("Linear::Backward: gradient shape does not match the last Forward");
    }
    weight_.grad.noalias() += dy.transpose() * input_;
    if (has_bias_) bias_.grad.row(0) += dy.colwise().sum();
    return dy * weight_.value;
  }

  Parameter<S>& weight() { return weight_; }
  Parameter<S>& bias() { return bias_; }

  ParamList<S> Params() {
    ParamList<S> list{{"weight", &weight_}};
    if (has_bias_) list.push_back({"bias", &bias_});
    return list;
  }

 private:
  int in_;
  int out_;
  bool has_bias_;
  Parameter<S> weight_;
  Parameter<S> bias_;  // 1 x out (1 x 0 without bias)
  Matrix<S> input_;
};

}  // namespace ddp::nn
