// GroupNorm (nn.GroupNorm): each sample's C channels split into G groups of
// C/G consecutive channels; every group is normalised with its own mean and
// biased variance over (C/G) * H * W values, then scaled per channel:
// y = gamma_c * (x - mean_ng) / sqrt(var_ng + eps) + beta_c. No batch
// statistics, so it behaves the same for any batch size and any rank layout,
// and train and eval modes are identical. In NCHW a group is one contiguous
// block of (C/G) * H * W values.
#pragma once

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/nn/norm_layer.h"

namespace ddp::nn {

template <typename S>
class GroupNorm : public NormLayer<S> {
 public:
  GroupNorm(int channels, int groups, double eps = 1e-5)
      : channels_(channels), groups_(groups), eps_(eps), weight_(1, channels), bias_(1, channels) {
    if (channels <= 0 || groups <= 0 || channels % groups != 0) {
      throw std::invalid_argument("GroupNorm: groups must be > 0 and divide channels (channels=" +
                                  std::to_string(channels) + ", groups=" + std::to_string(groups) + ")");
    }
    if (!(eps > 0)) throw std::invalid_argument("GroupNorm: eps must be > 0");
    weight_.value.setOnes();
  }

  Tensor4<S> Forward(const Tensor4<S>& x) override {
    if (x.c != channels_) {
      throw std::invalid_argument("GroupNorm::Forward: input has " + std::to_string(x.c) + " channels, expected " +
                                  std::to_string(channels_));
    }
    const Eigen::Index group_size = static_cast<Eigen::Index>(channels_ / groups_) * x.PlaneSize();
    invstd_ = Matrix<S>::Zero(x.n, groups_);
    xhat_ = x;
    for (int n = 0; n < x.n; ++n) {
      for (int g = 0; g < groups_; ++g) {
        auto block = Eigen::Map<Vector<S>>(xhat_.Plane(n, g * (channels_ / groups_)), group_size);
        const S mean = block.mean();  // two passes: mean, then squared deviations
        const S var = (block.array() - mean).square().mean();
        const S invstd = S(1) / std::sqrt(var + static_cast<S>(eps_));
        block = ((block.array() - mean) * invstd).matrix();
        invstd_(n, g) = invstd;
      }
    }
    Tensor4<S> y = xhat_;
    ScalePerChannel(&y, true);
    return y;
  }

  Tensor4<S> Backward(const Tensor4<S>& dy) override {
    if (!dy.SameShape(xhat_)) {
      throw std::invalid_argument("GroupNorm::Backward: gradient " + dy.ShapeString() +
                                  " does not match the last Forward " + xhat_.ShapeString());
    }
    const Eigen::Index plane = dy.PlaneSize();
    for (int n = 0; n < dy.n; ++n) {
      for (int c = 0; c < channels_; ++c) {
        const auto g = Eigen::Map<const Vector<S>>(dy.Plane(n, c), plane);
        weight_.grad(0, c) += g.dot(Eigen::Map<const Vector<S>>(xhat_.Plane(n, c), plane));
        bias_.grad(0, c) += g.sum();
      }
    }
    // dxhat = dy * gamma_c; per group: dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    Tensor4<S> dx = dy;
    ScalePerChannel(&dx, false);
    const Eigen::Index group_size = static_cast<Eigen::Index>(channels_ / groups_) * plane;
    for (int n = 0; n < dy.n; ++n) {
      for (int g = 0; g < groups_; ++g) {
        const int c0 = g * (channels_ / groups_);
        auto d = Eigen::Map<Vector<S>>(dx.Plane(n, c0), group_size);
        const auto xh = Eigen::Map<const Vector<S>>(xhat_.Plane(n, c0), group_size);
        const S mean_d = d.mean();
        const S mean_d_xhat = d.dot(xh) / static_cast<S>(group_size);
        d = ((d.array() - mean_d - xh.array() * mean_d_xhat) * invstd_(n, g)).matrix();
      }
    }
    return dx;
  }

  void SetTraining(bool) override {}  // GroupNorm has no mode
  ParamList<S> Params() override { return {{"weight", &weight_}, {"bias", &bias_}}; }
  BufferList<S> Buffers() override { return {}; }
  int channels() const override { return channels_; }

  Parameter<S>& weight() { return weight_; }
  Parameter<S>& bias() { return bias_; }

 private:
  // t = t * gamma_c (+ beta_c when add_bias), plane by plane.
  void ScalePerChannel(Tensor4<S>* t, bool add_bias) const {
    const Eigen::Index plane = t->PlaneSize();
    for (int n = 0; n < t->n; ++n) {
      for (int c = 0; c < channels_; ++c) {
        auto p = Eigen::Map<Vector<S>>(t->Plane(n, c), plane);
        p *= weight_.value(0, c);
        if (add_bias) p.array() += bias_.value(0, c);
      }
    }
  }

  int channels_;
  int groups_;
  double eps_;
  Parameter<S> weight_;  // gamma, 1 x C
  Parameter<S> bias_;    // beta, 1 x C
  Matrix<S> invstd_;     // N x G of the last Forward
  Tensor4<S> xhat_;
};

template <typename S>
NormFactory<S> GroupNormFactory(int groups, double eps = 1e-5) {
  return [groups, eps](int channels) -> std::unique_ptr<NormLayer<S>> {
    return std::make_unique<GroupNorm<S>>(channels, groups, eps);
  };
}

}  // namespace ddp::nn
