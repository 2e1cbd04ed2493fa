// GroupNorm whose arithmetic runs on a Device: core/nn's GroupNorm (same
// semantics and parameters) with core/cuda's GnForward / GnBackward.
//
// Forward: upload x (activation) and gamma, beta (parameter, one call);
// GnForward -> y and the per-(sample, group) mean and invstd, which stay on
// the device; download y (activation).
// Backward: upload dy (activation); GnBackward -> dx, dgamma, dbeta; download
// dx (activation) and dgamma, dbeta (parameter, one call), which are added to
// the parameters' gradients as core/nn does. No collective: GroupNorm's
// statistics are per sample.
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/device/device.h"
#include "core/device/tensor_shape.h"
#include "core/nn/group_norm.h"

namespace ddp::device {

template <typename S>
class DeviceGroupNorm : public nn::GroupNormLayer<S> {
  using Base = nn::GroupNormLayer<S>;

 public:
  // `device` must outlive the layer.
  DeviceGroupNorm(Device<S>* device, int channels, int groups, double eps = 1e-5)
      : Base(channels, groups, eps), device_(device), x_(device), dy_(device), out_(device), stats_(device),
        params_(device) {
    if (device_ == nullptr) throw std::invalid_argument("DeviceGroupNorm: no device");
    params_.Reserve(4 * static_cast<std::size_t>(channels));  // gamma, beta, dgamma, dbeta
  }

  nn::Tensor4<S> Forward(const nn::Tensor4<S>& x) override {
    this->CheckInput(x);
    const int64_t c = this->channels_;
    shape_ = ShapeOnly(x);
    S* xd = x_.Reserve(x.Size());
    device_->Upload(xd, x.data.data(), x.Size(), CopyKind::kActivation);
    std::vector<S> gamma_beta(2 * c);
    for (int64_t i = 0; i < c; ++i) {
      gamma_beta[i] = this->weight_.value(0, i);
      gamma_beta[c + i] = this->bias_.value(0, i);
    }
    S* p = params_.get();
    device_->Upload(p, gamma_beta.data(), gamma_beta.size(), CopyKind::kParameter);
    const std::size_t groups = static_cast<std::size_t>(x.n) * this->groups_;
    S* mean = stats_.Reserve(2 * groups);
    S* yd = out_.Reserve(x.Size());
    device_->GnForward(xd, ShapeOf(x), this->groups_, this->eps_, p, p + c, yd, mean, mean + groups);
    nn::Tensor4<S> y = nn::EmptyLike(x);
    device_->Download(y.data.data(), yd, y.Size(), CopyKind::kActivation);
    return y;
  }

  nn::Tensor4<S> Backward(const nn::Tensor4<S>& dy) override {
    CheckGradShape(dy, shape_, "GroupNorm");
    const int64_t c = this->channels_;
    S* dyd = dy_.Reserve(dy.Size());
    device_->Upload(dyd, dy.data.data(), dy.Size(), CopyKind::kActivation);
    const std::size_t groups = static_cast<std::size_t>(dy.n) * this->groups_;
    S* p = params_.get();
    S* mean = stats_.get();
    S* dxd = out_.Reserve(dy.Size());
    device_->GnBackward(dyd, x_.get(), ShapeOf(dy), this->groups_, mean, mean + groups, p, dxd, p + 2 * c,
                        p + 3 * c);
    nn::Tensor4<S> dx = nn::EmptyLike(dy);
    device_->Download(dx.data.data(), dxd, dx.Size(), CopyKind::kActivation);
    std::vector<S> grads(2 * c);  // dgamma, dbeta
    device_->Download(grads.data(), p + 2 * c, grads.size(), CopyKind::kParameter);
    for (int64_t i = 0; i < c; ++i) {
      this->weight_.grad(0, i) += grads[i];
      this->bias_.grad(0, i) += grads[c + i];
    }
    return dx;
  }

  Device<S>& device() { return *device_; }

 private:
  Device<S>* device_;
  DeviceArray<S> x_, dy_, out_;
  DeviceArray<S> stats_;   // N x G means, then N x G invstds, of the last Forward
  DeviceArray<S> params_;  // gamma, beta (uploaded each Forward), dgamma, dbeta
  nn::Tensor4<S> shape_;   // the last Forward's shape (no data)
};

template <typename S>
nn::NormFactory<S> DeviceGroupNormFactory(Device<S>* device, int groups, double eps = 1e-5) {
  if (device == nullptr) throw std::invalid_argument("DeviceGroupNormFactory: no device");
  return [device, groups, eps](int channels) -> std::unique_ptr<nn::NormLayer<S>> {
    return std::make_unique<DeviceGroupNorm<S>>(device, channels, groups, eps);
  };
}

}  // namespace ddp::device
