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

// What every GroupNorm holds, wherever its arithmetic runs: the affine
// parameters and the grouping. GroupNorm below computes with Eigen;
// core/device's DeviceGroupNorm on a device.
template <typename S>
class GroupNormLayer : public NormLayer<S> {
 public:
  GroupNormLayer(int channels, int groups, double eps)
      : channels_(channels), groups_(groups), eps_(eps), weight_(1, channels), bias_(1, channels) {
    if (channels <= 0 || groups <= 0 || channels % groups != 0) {
      throw std::invalid_argument("GroupNorm: groups must be > 0 and divide channels (channels=" +
                                  std::to_string(channels) + ", groups=" + std::to_string(groups) + ")");
    }
    if (!(eps > 0)) throw std::invalid_argument("GroupNorm: eps must be > 0");
    weight_.value.setOnes();
  }

  void SetTraining(bool) override {}  // GroupNorm has no mode
  ParamList<S> Params() override { return {{"weight", &weight_}, {"bias", &bias_}}; }
  BufferList<S> Buffers() override { return {}; }
  int channels() const override { return channels_; }
  int groups() const { return groups_; }
  double eps() const { return eps_; }

  Parameter<S>& weight() { return weight_; }
  Parameter<S>& bias() { return bias_; }

 protected:
  void CheckInput(const Tensor4<S>& x) const {
    if (x.c != channels_) {
      throw std::invalid_argument("GroupNorm::Forward: input has " + std::to_string(x.c) + " channels, expected " +
                                  std::to_string(channels_));
    }
  }

  int channels_;
  int groups_;
  double eps_;
  Parameter<S> weight_;  // gamma, 1 x C
  Parameter<S> bias_;    // beta, 1 x C
};

template <typename S>
class GroupNorm : public GroupNormLayer<S> {
  using Base = GroupNormLayer<S>;
  using Base::bias_;
  using Base::channels_;
  using Base::eps_;
  using Base::groups_;
  using Base::weight_;

 public:
  GroupNorm(int channels, int groups, double eps = 1e-5) : Base(channels, groups, eps) {}

  // Per (sample, group): the mean and the biased variance in two passes over
  // the group's contiguous block (the second from cache), then one pass that
  // writes x-hat (kept for Backward, storage reused) and y.
  Tensor4<S> Forward(const Tensor4<S>& x) override {
    this->CheckInput(x);
    const int per_group = channels_ / groups_;
    const Eigen::Index plane = x.PlaneSize();
    const Eigen::Index group_size = per_group * plane;
    invstd_.resize(x.n, groups_);
    ReshapeLike(&xhat_, x);
    Tensor4<S> y = EmptyLike(x);
    for (int n = 0; n < x.n; ++n) {
      for (int g = 0; g < groups_; ++g) {
        const int c0 = g * per_group;
        const auto block = Eigen::Map<const Array<S>>(x.Plane(n, c0), group_size);
        const S mean = block.mean();
        const S var = (block - mean).square().mean();
        const S invstd = S(1) / std::sqrt(var + static_cast<S>(eps_));
        invstd_(n, g) = invstd;
        for (int c = c0; c < c0 + per_group; ++c) {
          auto xh = Eigen::Map<Array<S>>(xhat_.Plane(n, c), plane);
          xh = (Eigen::Map<const Array<S>>(x.Plane(n, c), plane) - mean) * invstd;
          Eigen::Map<Array<S>>(y.Plane(n, c), plane) = xh * weight_.value(0, c) + bias_.value(0, c);
        }
      }
    }
    return y;
  }

  // With dxhat = dy * gamma_c, per (sample, group):
  //   dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
  // and both means follow from the per-channel sums sum(dy) and
  // sum(dy * xhat) that the parameter gradients need anyway: one pass reads
  // dy and x-hat for all of them, a second (from cache) writes dx.
  Tensor4<S> Backward(const Tensor4<S>& dy) override {
    if (!dy.SameShape(xhat_)) {
      throw std::invalid_argument("GroupNorm::Backward: gradient " + dy.ShapeString() +
                                  " does not match the last Forward " + xhat_.ShapeString());
    }
    const int per_group = channels_ / groups_;
    const Eigen::Index plane = dy.PlaneSize();
    const S group_size = static_cast<S>(per_group * plane);
    Tensor4<S> dx = EmptyLike(dy);
    for (int n = 0; n < dy.n; ++n) {
      for (int g = 0; g < groups_; ++g) {
        const int c0 = g * per_group;
        S sum_dxhat = 0;
        S sum_dxhat_xhat = 0;
        for (int c = c0; c < c0 + per_group; ++c) {
          const auto d = Eigen::Map<const Array<S>>(dy.Plane(n, c), plane);
          const S sum_dy = d.sum();
          const S sum_dy_xhat = (d * Eigen::Map<const Array<S>>(xhat_.Plane(n, c), plane)).sum();
          weight_.grad(0, c) += sum_dy_xhat;
          bias_.grad(0, c) += sum_dy;
          sum_dxhat += weight_.value(0, c) * sum_dy;
          sum_dxhat_xhat += weight_.value(0, c) * sum_dy_xhat;
        }
        const S mean_dxhat = sum_dxhat / group_size;
        const S mean_dxhat_xhat = sum_dxhat_xhat / group_size;
        const S invstd = invstd_(n, g);
        for (int c = c0; c < c0 + per_group; ++c) {
          const auto d = Eigen::Map<const Array<S>>(dy.Plane(n, c), plane);
          const auto xh = Eigen::Map<const Array<S>>(xhat_.Plane(n, c), plane);
          Eigen::Map<Array<S>>(dx.Plane(n, c), plane) =
              (d * weight_.value(0, c) - mean_dxhat - xh * mean_dxhat_xhat) * invstd;
        }
      }
    }
    return dx;
  }

 private:
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
