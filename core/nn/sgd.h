// SGD with momentum and weight decay, as torch.optim.SGD (dampening 0, no
// Nesterov): for each parameter p with gradient g,
//   d = g + weight_decay * p
//   buf = d on the first step, else buf = momentum * buf + d
//   p -= lr * (momentum != 0 ? buf : d)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/param.h"

namespace ddp::nn {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

template <typename S>
class Sgd {
 public:
  Sgd(ParamList<S> params, SgdOptions opts) : params_(std::move(params)), opts_(opts), bufs_(params_.size()) {
    if (!(opts.lr >= 0)) throw std::invalid_argument("Sgd: lr must be >= 0");
    if (!(opts.momentum >= 0)) throw std::invalid_argument("Sgd: momentum must be >= 0");
    if (!(opts.weight_decay >= 0)) throw std::invalid_argument("Sgd: weight_decay must be >= 0");
  }

  void Step() {
    const S lr = static_cast<S>(opts_.lr);
    const S momentum = static_cast<S>(opts_.momentum);
    const S wd = static_cast<S>(opts_.weight_decay);
    for (size_t i = 0; i < params_.size(); ++i) {
      Parameter<S>& p = *params_[i].param;
      Matrix<S> d = p.grad;
      if (opts_.weight_decay != 0) d += wd * p.value;
      if (opts_.momentum != 0) {
        if (bufs_[i].size() == 0) {
          bufs_[i] = d;
        } else {
          bufs_[i] = momentum * bufs_[i] + d;
        }
        d = bufs_[i];
      }
      p.value -= lr * d;
    }
  }

  void ZeroGrad() { ZeroGrads(params_); }

  // The momentum buffers flattened in parameter order (empty before the
  // first step), and the inverse: how one optimizer adopts another's state,
  // as the per-step exactness checks of the fixes do (core/exact).
  Vector<S> FlattenMomentum() const {
    int64_t total = 0;
    for (const Matrix<S>& b : bufs_) {
      if (b.size() == 0) return Vector<S>();
      total += b.size();
    }
    Vector<S> flat(total);
    int64_t at = 0;
    for (const Matrix<S>& b : bufs_) {
      flat.segment(at, b.size()) = Eigen::Map<const Vector<S>>(b.data(), b.size());
      at += b.size();
    }
    return flat;
  }
  // Throws std::invalid_argument when `flat` is neither empty nor the size
  // of the parameters.
  void LoadMomentum(const Vector<S>& flat) {
    if (flat.size() == 0) {
      for (Matrix<S>& b : bufs_) b.resize(0, 0);
      return;
    }
    if (flat.size() != NumElements(params_)) {
      throw std::invalid_argument("Sgd::LoadMomentum: " + std::to_string(flat.size()) +
                                  " values for " + std::to_string(NumElements(params_)) +
                                  " parameters");
    }
    int64_t at = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      const Matrix<S>& v = params_[i].param->value;
      bufs_[i] = Eigen::Map<const Matrix<S>>(flat.data() + at, v.rows(), v.cols());
      at += v.size();
    }
  }
  const ParamList<S>& params() const { return params_; }

  // For learning-rate schedules (warm-up, cosine decay): the next Step uses lr.
  void set_lr(double lr) {
    if (!(lr >= 0)) throw std::invalid_argument("Sgd: lr must be >= 0");
    opts_.lr = lr;
  }
  double lr() const { return opts_.lr; }

 private:
  ParamList<S> params_;
  SgdOptions opts_;
  std::vector<Matrix<S>> bufs_;  // momentum buffers; empty until the first step
};

}  // namespace ddp::nn
