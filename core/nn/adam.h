// Adam, as torch.optim.Adam (amsgrad off, L2 weight decay added to the
// gradient, not AdamW's decoupled decay): for each parameter p with gradient
// g, at step t = 1, 2, ...
//   d = g + weight_decay * p
//   m = beta1 * m + (1 - beta1) * d          (m, v start at 0)
//   v = beta2 * v + (1 - beta2) * d * d
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The bias corrections are applied in this order (step size first, then
// the denominator) because that is how PyTorch's single-tensor Adam rounds;
// golden_test checks it against PyTorch 1.13 step by step.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/nn/param.h"

namespace ddp::nn {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

template <typename S>
class Adam {
 public:
  Adam(ParamList<S> params, AdamOptions opts)
      : params_(std::move(params)), opts_(opts), m_(params_.size()), v_(params_.size()) {
    if (!(opts.lr >= 0)) throw std::invalid_argument("Adam: lr must be >= 0");
    if (!(opts.beta1 >= 0 && opts.beta1 < 1)) throw std::invalid_argument("Adam: beta1 must be in [0, 1)");
    if (!(opts.beta2 >= 0 && opts.beta2 < 1)) throw std::invalid_argument("Adam: beta2 must be in [0, 1)");
    if (!(opts.eps >= 0)) throw std::invalid_argument("Adam: eps must be >= 0");
    if (!(opts.weight_decay >= 0)) throw std::invalid_argument("Adam: weight_decay must be >= 0");
  }

  void Step() {
    ++t_;
    const S b1 = static_cast<S>(opts_.beta1);
    const S b2 = static_cast<S>(opts_.beta2);
    // 1 - beta in double, then cast: PyTorch passes them as Python floats.
    const S one_minus_b1 = static_cast<S>(1 - opts_.beta1);
    const S one_minus_b2 = static_cast<S>(1 - opts_.beta2);
    const S wd = static_cast<S>(opts_.weight_decay);
    const S eps = static_cast<S>(opts_.eps);
    // PyTorch computes the corrections in double from Python floats.
    const double correction1 = 1 - std::pow(opts_.beta1, static_cast<double>(t_));
    const double correction2 = 1 - std::pow(opts_.beta2, static_cast<double>(t_));
    const S step_size = static_cast<S>(opts_.lr / correction1);
    const S correction2_sqrt = static_cast<S>(std::sqrt(correction2));
    for (size_t i = 0; i < params_.size(); ++i) {
      Parameter<S>& p = *params_[i].param;
      Matrix<S> d = p.grad;
      if (opts_.weight_decay != 0) d += wd * p.value;
      if (m_[i].size() == 0) {
        m_[i] = Matrix<S>::Zero(d.rows(), d.cols());
        v_[i] = Matrix<S>::Zero(d.rows(), d.cols());
      }
      m_[i] = m_[i] * b1 + one_minus_b1 * d;
      v_[i] = (v_[i].array() * b2 + (one_minus_b2 * d.array()) * d.array()).matrix();
      const Matrix<S> denom = ((v_[i].array().sqrt() / correction2_sqrt) + eps).matrix();
      p.value.array() -= step_size * (m_[i].array() / denom.array());
    }
  }

  void ZeroGrad() { ZeroGrads(params_); }
  const ParamList<S>& params() const { return params_; }

  // For learning-rate schedules (warm-up, cosine decay): the next Step uses lr.
  void set_lr(double lr) {
    if (!(lr >= 0)) throw std::invalid_argument("Adam: lr must be >= 0");
    opts_.lr = lr;
  }
  double lr() const { return opts_.lr; }
  int64_t steps() const { return t_; }

 private:
  ParamList<S> params_;
  AdamOptions opts_;
  std::vector<Matrix<S>> m_, v_;  // first and second moments; empty until the first step
  int64_t t_ = 0;
};

}  // namespace ddp::nn
