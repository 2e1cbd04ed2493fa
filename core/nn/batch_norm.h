// BatchNorm over N x C (BatchNorm1d, pass FromRows(x)) and N x C x H x W
// (BatchNorm2d), with PyTorch's semantics:
//  * training: normalise with the batch mean and the *biased* variance
//    (M2 / count); update running_mean/var with momentum m as
//    running = (1 - m) * running + m * batch, using the *unbiased* variance
//    M2 / (count - 1) for running_var. A batch with count <= 1 per channel is
//    an error (PyTorch: "Expected more than 1 value per channel when training").
//  * eval: normalise with running_mean / running_var; nothing is updated.
//  * y = gamma * (x - mean) / sqrt(var + eps) + beta.
//
// Hooks for synchronized BatchNorm. The training forward is split into
//   (1) local statistics: ComputeChannelStats(x) -> ChannelStats (count, mean, M2),
//   (2) hooks.merge_stats(local) -> the statistics to normalise with,
//   (3) normalisation and the running-stat update with the merged statistics;
// and the training backward into
//   (1) local sums: LocalGradSums(dy) -> (sum dy, sum dy * xhat) per channel,
//   (2) hooks.merge_grad_sums(local) -> global sums,
//   (3) dx = gamma * invstd / M * (M * dy - sum_dy - xhat * sum_dy_xhat), with
//       M the merged count.
// An empty hook is the identity (plain local BatchNorm). A SyncBatchNorm is a
// BatchNorm whose merge_stats all-gathers every rank's ChannelStats and
// returns MergeChannelStats over them in rank order, and whose
// merge_grad_sums all-reduces (sums) the ChannelGradSums. Ranks may hold
// different batch sizes, including none: an empty rank contributes count 0.
// As in PyTorch's SyncBatchNorm, dgamma and dbeta come from the *local* sums
// (DDP's gradient averaging combines them across ranks afterwards).
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/nn/channel_stats.h"
#include "core/nn/norm_layer.h"

namespace ddp::nn {

template <typename S>
struct BatchNormHooks {
  // Local statistics -> statistics to normalise with. Empty: identity.
  std::function<ChannelStats<S>(const ChannelStats<S>& local)> merge_stats;
  // Local gradient sums -> global gradient sums. Empty: identity.
  std::function<ChannelGradSums<S>(const ChannelGradSums<S>& local)> merge_grad_sums;
};

struct BatchNormOptions {
  double momentum = 0.1;
  double eps = 1e-5;
};

// What every BatchNorm holds and what callers read and write of it, wherever
// its arithmetic runs: the affine parameters, the running statistics (host
// matrices: DDP broadcasts them, checks compare them) and the mode. BatchNorm
// below computes with Eigen; core/device's DeviceBatchNorm on a device
// (core/cuda's kernels, or their host emulation). Code that needs more than
// NormLayer of a BatchNorm (PreciseBN, running-stat errors) uses this class.
template <typename S>
class BatchNormLayer : public NormLayer<S> {
 public:
  BatchNormLayer(int channels, BatchNormOptions opts)
      : channels_(channels), opts_(opts), weight_(1, channels), bias_(1, channels),
        running_mean_(Matrix<S>::Zero(1, channels)), running_var_(Matrix<S>::Ones(1, channels)) {
    if (channels <= 0) throw std::invalid_argument("BatchNorm: channels must be > 0");
    if (!(opts.eps > 0)) throw std::invalid_argument("BatchNorm: eps must be > 0");
    if (!(opts.momentum >= 0 && opts.momentum <= 1)) throw std::invalid_argument("BatchNorm: momentum must be in [0, 1]");
    weight_.value.setOnes();
  }

  void SetTraining(bool training) override { training_ = training; }
  bool training() const { return training_; }

  ParamList<S> Params() override { return {{"weight", &weight_}, {"bias", &bias_}}; }
  BufferList<S> Buffers() override { return {{"running_mean", &running_mean_}, {"running_var", &running_var_}}; }
  int channels() const override { return channels_; }
  const BatchNormOptions& options() const { return opts_; }

  Parameter<S>& weight() { return weight_; }
  Parameter<S>& bias() { return bias_; }
  Matrix<S>& running_mean() { return running_mean_; }  // 1 x C
  Matrix<S>& running_var() { return running_var_; }    // 1 x C
  // The merged statistics of the last training Forward.
  virtual const ChannelStats<S>& last_stats() const = 0;

 protected:
  void CheckInput(const Tensor4<S>& x) const {
    if (x.c != channels_) {
      throw std::invalid_argument("BatchNorm::Forward: input has " + std::to_string(x.c) + " channels, expected " +
                                  std::to_string(channels_));
    }
  }
  // PyTorch's "Expected more than 1 value per channel when training".
  static void CheckTrainingCount(int64_t count) {
    if (count <= 1) {
      throw std::invalid_argument("BatchNorm: expected more than 1 value per channel when training, got " +
                                  std::to_string(count));
    }
  }

  int channels_;
  BatchNormOptions opts_;
  Parameter<S> weight_;  // gamma, 1 x C
  Parameter<S> bias_;    // beta, 1 x C
  Matrix<S> running_mean_;
  Matrix<S> running_var_;
  bool training_ = true;
  bool forward_training_ = true;  // mode of the last Forward
};

template <typename S>
class BatchNorm : public BatchNormLayer<S> {
  using Base = BatchNormLayer<S>;
  using Base::bias_;
  using Base::channels_;
  using Base::forward_training_;
  using Base::opts_;
  using Base::running_mean_;
  using Base::running_var_;
  using Base::training_;
  using Base::weight_;

 public:
  explicit BatchNorm(int channels, BatchNormOptions opts = {}, BatchNormHooks<S> hooks = {})
      : Base(channels, opts), hooks_(std::move(hooks)) {}

  Tensor4<S> Forward(const Tensor4<S>& x) override {
    this->CheckInput(x);
    forward_training_ = training_;
    Vector<S> mean;
    if (training_) {
      const ChannelStats<S> local = ComputeChannelStats(x);
      stats_ = hooks_.merge_stats ? hooks_.merge_stats(local) : local;
      if (stats_.channels() != channels_ || stats_.m2.size() != channels_) {
        throw std::runtime_error("BatchNorm: merge_stats returned statistics for the wrong number of channels");
      }
      this->CheckTrainingCount(stats_.count);
      const S count = static_cast<S>(stats_.count);
      mean = stats_.mean;
      invstd_ = ((stats_.m2 / count).array() + static_cast<S>(opts_.eps)).rsqrt().matrix();
      const S m = static_cast<S>(opts_.momentum);
      running_mean_.row(0) = (S(1) - m) * running_mean_.row(0) + m * stats_.mean.transpose();
      running_var_.row(0) = (S(1) - m) * running_var_.row(0) + m * (stats_.m2 / (count - S(1))).transpose();
    } else {
      mean = running_mean_.row(0).transpose();
      invstd_ = (running_var_.row(0).transpose().array() + static_cast<S>(opts_.eps)).rsqrt().matrix();
    }
    // One pass over x writes both x-hat (kept for Backward; its storage is
    // reused call after call) and y, sample-major so memory is read in order.
    ReshapeLike(&xhat_, x);
    Tensor4<S> y = EmptyLike(x);
    const Eigen::Index plane = x.PlaneSize();
    for (int n = 0; n < x.n; ++n) {
      for (int c = 0; c < x.c; ++c) {
        const auto xin = Eigen::Map<const Array<S>>(x.Plane(n, c), plane);
        auto xh = Eigen::Map<Array<S>>(xhat_.Plane(n, c), plane);
        xh = (xin - mean[c]) * invstd_[c];
        Eigen::Map<Array<S>>(y.Plane(n, c), plane) = xh * weight_.value(0, c) + bias_.value(0, c);
      }
    }
    return y;
  }

  // Per-channel (sum dy, sum dy * xhat) of this participant, using the x-hat of
  // the last Forward. Public so a SyncBatchNorm (or a test) can compute the
  // contribution of a rank before calling Backward.
  ChannelGradSums<S> LocalGradSums(const Tensor4<S>& dy) const {
    CheckGradShape(dy);
    ChannelGradSums<S> s{Vector<S>::Zero(channels_), Vector<S>::Zero(channels_)};
    const Eigen::Index plane = dy.PlaneSize();
    for (int n = 0; n < dy.n; ++n) {
      for (int c = 0; c < channels_; ++c) {
        const auto g = Eigen::Map<const Vector<S>>(dy.Plane(n, c), plane);
        s.sum_dy[c] += g.sum();
        s.sum_dy_xhat[c] += g.dot(Eigen::Map<const Vector<S>>(xhat_.Plane(n, c), plane));
      }
    }
    return s;
  }

  Tensor4<S> Backward(const Tensor4<S>& dy) override {
    const ChannelGradSums<S> local = LocalGradSums(dy);
    weight_.grad.row(0) += local.sum_dy_xhat.transpose();
    bias_.grad.row(0) += local.sum_dy.transpose();
    Tensor4<S> dx = EmptyLike(dy);
    const Eigen::Index plane = dy.PlaneSize();
    if (!forward_training_) {
      // Eval: mean and invstd are constants, so dx = dy * gamma * invstd.
      for (int n = 0; n < dy.n; ++n) {
        for (int c = 0; c < channels_; ++c) {
          Eigen::Map<Array<S>>(dx.Plane(n, c), plane) =
              Eigen::Map<const Array<S>>(dy.Plane(n, c), plane) * (weight_.value(0, c) * invstd_[c]);
        }
      }
      return dx;
    }
    const ChannelGradSums<S> global = hooks_.merge_grad_sums ? hooks_.merge_grad_sums(local) : local;
    if (global.sum_dy.size() != channels_ || global.sum_dy_xhat.size() != channels_) {
      throw std::runtime_error("BatchNorm: merge_grad_sums returned sums for the wrong number of channels");
    }
    const S count = static_cast<S>(stats_.count);
    const Vector<S> mean_dy = global.sum_dy / count;
    const Vector<S> mean_dy_xhat = global.sum_dy_xhat / count;
    const Vector<S> scale = weight_.value.row(0).transpose().cwiseProduct(invstd_);
    // One pass: dy and x-hat in, dx out, sample-major.
    for (int n = 0; n < dy.n; ++n) {
      for (int c = 0; c < channels_; ++c) {
        const auto g = Eigen::Map<const Array<S>>(dy.Plane(n, c), plane);
        const auto xh = Eigen::Map<const Array<S>>(xhat_.Plane(n, c), plane);
        Eigen::Map<Array<S>>(dx.Plane(n, c), plane) = (g - mean_dy[c] - xh * mean_dy_xhat[c]) * scale[c];
      }
    }
    return dx;
  }

  const ChannelStats<S>& last_stats() const override { return stats_; }

 private:
  void CheckGradShape(const Tensor4<S>& dy) const {
    if (!dy.SameShape(xhat_)) {
      throw std::invalid_argument("BatchNorm::Backward: gradient " + dy.ShapeString() +
                                  " does not match the last Forward " + xhat_.ShapeString());
    }
  }

  BatchNormHooks<S> hooks_;
  ChannelStats<S> stats_;
  Vector<S> invstd_;
  Tensor4<S> xhat_;
};

// A factory for the reference models; each layer gets a copy of `hooks`.
template <typename S>
NormFactory<S> BatchNormFactory(BatchNormOptions opts = {}, BatchNormHooks<S> hooks = {}) {
  return [opts, hooks](int channels) -> std::unique_ptr<NormLayer<S>> {
    return std::make_unique<BatchNorm<S>>(channels, opts, hooks);
  };
}

}  // namespace ddp::nn
