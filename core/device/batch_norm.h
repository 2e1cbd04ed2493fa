// BatchNorm whose arithmetic runs on a Device: core/nn's BatchNorm (same
// semantics, same parameters and host running statistics, same merge points
// for SyncBatchNorm), with core/cuda's kernels in place of Eigen.
//
// Training forward, per call:
//   upload x (activation); upload gamma, beta, running stats and the local
//   count in one call (parameter);
//   BnLocalStats -> local (count, mean, M2), packed on the device as
//   [count, mean_0..C-1, M2_0..C-1], the layout of SyncBatchNorm's all-gather;
//   hooks.merge_stats -> merged (mean, M2) on the device and the count
//   (empty hook: the local ones);
//   BnFinalizeStats (invstd, running stats), BnNormalize -> y;
//   download y (activation); download the running stats (parameter).
// Training backward:
//   upload dy (activation); BnLocalGradSums -> (sum dy, sum dy*xhat) on the
//   device; download them (parameter: they are dbeta and dgamma, local as in
//   core/nn); hooks.merge_grad_sums (in place, device); BnInputGrad -> dx;
//   download dx (activation).
// Eval: forward normalises with the running stats (BnInvstdFromVar); backward
// is BnInputGrad with zero sums (dx = dy * gamma * invstd, the same bits).
// last_stats() downloads the merged statistics when asked (statistic).
//
// x stays on the device for the backward. Every copy goes through
// Device::Upload / Download and is counted there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/device/device.h"
#include "core/device/tensor_shape.h"
#include "core/nn/batch_norm.h"

namespace ddp::device {

template <typename S>
struct DeviceBatchNormHooks {
  // `local`: this participant's statistics on the device, [count, mean (C),
  // M2 (C)] (2C + 1 values, the count as a value of S; `local_count` is the
  // same count on the host). Writes the statistics to normalise with into
  // mean and m2 (device, C each) and returns their count. `scratch`: device
  // memory the hook may use, kept by the layer from call to call. Empty: the
  // local statistics.
  std::function<int64_t(Device<S>& device, DeviceArray<S>& scratch, const S* local, int64_t local_count,
                        int64_t channels, S* mean, S* m2)>
      merge_stats;
  // [sum dy (C), sum dy * xhat (C)] on the device: local in, global out, in
  // place. Empty: identity.
  std::function<void(Device<S>& device, S* sums, int64_t channels)> merge_grad_sums;
};

template <typename S>
class DeviceBatchNorm : public nn::BatchNormLayer<S> {
  using Base = nn::BatchNormLayer<S>;

 public:
  // `device` must outlive the layer.
  DeviceBatchNorm(Device<S>* device, int channels, nn::BatchNormOptions opts = {}, DeviceBatchNormHooks<S> hooks = {})
      : Base(channels, opts), device_(device), hooks_(std::move(hooks)), x_(device), dy_(device), out_(device),
        state_(device), scratch_(device) {
    if (device_ == nullptr) throw std::invalid_argument("DeviceBatchNorm: no device");
    state_.Reserve(kStateSize * static_cast<std::size_t>(channels) + 1);
  }

  nn::Tensor4<S> Forward(const nn::Tensor4<S>& x) override {
    this->CheckInput(x);
    return ThroughDevice(*device_, x_, out_, x, [&](const S* xd, S* yd) { ForwardOnDevice(xd, x, yd); });
  }

  nn::Tensor4<S> Backward(const nn::Tensor4<S>& dy) override {
    CheckGradShape(dy, shape_, "BatchNorm");
    return ThroughDevice(*device_, dy_, out_, dy, [&](const S* dyd, S* dxd) { BackwardOnDevice(dyd, dxd); });
  }

  // Forward on activations already in device memory (bench/sync_bn times
  // this; Forward is upload + this + download). `x`: `shape`'s values on
  // this device (shape's own data is not read); it stays the caller's and
  // must stay valid and unchanged until the next BackwardOnDevice / Backward.
  // `y`: the output, on this device. The parameters and running statistics
  // cross as in Forward (they live on the host).
  void ForwardOnDevice(const S* x, const nn::Tensor4<S>& shape, S* y) {
    this->CheckInput(shape);
    const int64_t c = this->channels_;
    this->forward_training_ = this->training_;
    shape_ = ShapeOnly(shape);
    x_in_ = x;
    const NchwShape sh = ShapeOf(shape);
    // gamma, beta, running mean, running var, and the local count.
    std::vector<S> pack(4 * c + 1);
    for (int64_t i = 0; i < c; ++i) {
      pack[i] = this->weight_.value(0, i);
      pack[c + i] = this->bias_.value(0, i);
      pack[2 * c + i] = this->running_mean_(0, i);
      pack[3 * c + i] = this->running_var_(0, i);
    }
    const int64_t local_count = sh.n * sh.plane;
    pack[4 * c] = static_cast<S>(local_count);
    S* st = state_.get();
    device_->Upload(st, pack.data(), this->training_ ? pack.size() : 4 * c, CopyKind::kParameter);
    const nn::BatchNormOptions& o = this->opts_;
    if (this->training_) {
      device_->BnLocalStats(x, sh, At(kLocalMean), At(kLocalM2));
      int64_t count = local_count;
      mean_ = At(kLocalMean);
      if (hooks_.merge_stats) {
        count = hooks_.merge_stats(*device_, scratch_, st + 4 * c, local_count, c, At(kMean), At(kM2));
        mean_ = At(kMean);
      }
      this->CheckTrainingCount(count);
      count_ = count;
      stats_count_ = count;
      stats_mean_ = mean_;  // the M2s follow the means (C values later)
      host_stats_fresh_ = false;
      device_->BnFinalizeStats(mean_, mean_ + c, count, c, o.eps, o.momentum, At(kInvstd), At(kRunMean),
                               At(kRunVar));
    } else {
      device_->BnInvstdFromVar(At(kRunVar), c, o.eps, At(kInvstd));
      mean_ = At(kRunMean);
    }
    device_->BnNormalize(x, sh, mean_, At(kInvstd), At(kGamma), At(kBeta), y);
    if (this->training_) {
      std::vector<S> rs(2 * c);
      device_->Download(rs.data(), At(kRunMean), rs.size(), CopyKind::kParameter);  // running var follows
      for (int64_t i = 0; i < c; ++i) {
        this->running_mean_(0, i) = rs[i];
        this->running_var_(0, i) = rs[c + i];
      }
    }
  }

  // Backward on a gradient already in device memory, of the last forward's
  // shape; `dx` on this device. dbeta, dgamma come to the host as in Backward.
  void BackwardOnDevice(const S* dy, S* dx) {
    const int64_t c = this->channels_;
    const NchwShape sh = ShapeOf(shape_);
    device_->BnLocalGradSums(dy, x_in_, sh, mean_, At(kInvstd), At(kSumDy), At(kSumDyXhat));
    // dbeta, dgamma: the local sums (core/nn; DDP averages them afterwards).
    std::vector<S> sums(2 * c);
    device_->Download(sums.data(), At(kSumDy), sums.size(), CopyKind::kParameter);
    for (int64_t i = 0; i < c; ++i) {
      this->bias_.grad(0, i) += sums[i];
      this->weight_.grad(0, i) += sums[c + i];
    }
    if (this->forward_training_) {
      if (hooks_.merge_grad_sums) hooks_.merge_grad_sums(*device_, At(kSumDy), c);
      device_->BnInputGrad(dy, x_in_, sh, mean_, At(kInvstd), At(kGamma), At(kSumDy), At(kSumDyXhat), count_, dx);
    } else {
      // Eval: mean and invstd are constants; zero sums leave dy * gamma * invstd.
      device_->Zero(At(kZeros), 2 * c);
      device_->BnInputGrad(dy, x_in_, sh, mean_, At(kInvstd), At(kGamma), At(kZeros), At(kZeros) + c, 1, dx);
    }
  }

  // Downloaded on the first call after a training Forward.
  const nn::ChannelStats<S>& last_stats() const override {
    if (!host_stats_fresh_ && stats_mean_ != nullptr) {
      const int64_t c = this->channels_;
      std::vector<S> both(2 * c);
      device_->Download(both.data(), stats_mean_, both.size(), CopyKind::kStatistic);
      host_stats_.count = stats_count_;
      host_stats_.mean = Eigen::Map<const nn::Vector<S>>(both.data(), c);
      host_stats_.m2 = Eigen::Map<const nn::Vector<S>>(both.data() + c, c);
      host_stats_fresh_ = true;
    }
    return host_stats_;
  }

  Device<S>& device() { return *device_; }

 private:
  // The layer's per-channel values on the device, C each (kCount: 1), in
  // this order: what is uploaded in one call (gamma .. count) comes first,
  // each mean is followed by its M2, the running mean by the running var,
  // sum dy by sum dy * xhat, so each pair moves in one copy.
  enum Slot { kGamma, kBeta, kRunMean, kRunVar, kLocalMean, kLocalM2, kMean, kM2, kInvstd, kSumDy, kSumDyXhat,
              kZeros, kZeros2, kStateSize };
  // Slots from kLocalMean on sit one value later: the count is between.
  S* At(Slot s) {
    const int64_t c = this->channels_;
    return state_.get() + s * c + (s >= kLocalMean ? 1 : 0);
  }

  Device<S>* device_;
  DeviceBatchNormHooks<S> hooks_;
  DeviceArray<S> x_, dy_, out_, state_;
  DeviceArray<S> scratch_;  // the merge hook's
  nn::Tensor4<S> shape_;   // the last Forward's shape (no data)
  const S* x_in_ = nullptr;  // the last Forward's input (device; x_ or the caller's)
  const S* mean_ = nullptr;  // what the last Forward normalised with (device)
  int64_t count_ = 0;
  const S* stats_mean_ = nullptr;  // the last training Forward's merged mean, M2 after it (device)
  int64_t stats_count_ = 0;
  mutable nn::ChannelStats<S> host_stats_;
  mutable bool host_stats_fresh_ = false;
};

// Builds DeviceBatchNorm layers on `device` (each with a copy of `hooks`).
template <typename S>
nn::NormFactory<S> DeviceBatchNormFactory(Device<S>* device, nn::BatchNormOptions opts = {},
                                          DeviceBatchNormHooks<S> hooks = {}) {
  if (device == nullptr) throw std::invalid_argument("DeviceBatchNormFactory: no device");
  return [device, opts, hooks](int channels) -> std::unique_ptr<nn::NormLayer<S>> {
    return std::make_unique<DeviceBatchNorm<S>>(device, channels, opts, hooks);
  };
}

}  // namespace ddp::device
