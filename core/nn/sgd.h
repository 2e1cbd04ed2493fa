// SGD with momentum and weight decay, as torch.optim.SGD (dampening 0, no
// Nesterov): for each parameter p with gradient g,
//   d = g + weight_decay * p
//   buf = d on the first step, else buf = momentum * buf + d
//   p -= lr * (momentum != 0 ? buf : d)
#pragma once

#include <stdexcept>
#include <utility>
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
  const ParamList<S>& params() const { return params_; }

  // For learning-rate schedules (warm-up, cosine decay): the next Step uses lr.
  void set_lr(double lr) {
    if (!(lr >= 0)) throw std::invalid_argument("Sgd: lr must be >= 0");
    opts_.lr = lr;
  }
  double lr() const { return opts_.lr; }

  // The momentum buffers, one per parameter in list order (empty before the
  // first step): the optimizer's state, which a per-step exactness check
  // copies from one model's optimizer to another's along with the parameters.
  const std::vector<Matrix<S>>& momentum_buffers() const { return bufs_; }
  void set_momentum_buffers(std::vector<Matrix<S>> bufs) {
    if (bufs.size() != bufs_.size()) throw std::invalid_argument("Sgd: wrong number of momentum buffers");
    bufs_ = std::move(bufs);
  }

 private:
  ParamList<S> params_;
  SgdOptions opts_;
  std::vector<Matrix<S>> bufs_;  // momentum buffers; empty until the first step
};

}  // namespace ddp::nn
