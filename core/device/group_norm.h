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
    return ThroughDevice(*device_, x_, out_, x, [&](const S* xd, S* yd) { ForwardOnDevice(xd, x, yd); });
  }

  nn::Tensor4<S> Backward(const nn::Tensor4<S>& dy) override {
    CheckGradShape(dy, shape_, "GroupNorm");
    return ThroughDevice(*device_, dy_, out_, dy, [&](const S* dyd, S* dxd) { BackwardOnDevice(dyd, dxd); });
  }

  // Forward on activations already in device memory (bench/sync_bn times
  // this; Forward is upload + this + download): as DeviceBatchNorm's. `x`
  // must stay valid and unchanged until the next backward; gamma, beta cross
  // as in Forward.
  void ForwardOnDevice(const S* x, const nn::Tensor4<S>& shape, S* y) {
    this->CheckInput(shape);
    const int64_t c = this->channels_;
    shape_ = ShapeOnly(shape);
    x_in_ = x;
    std::vector<S> gamma_beta(2 * c);
    for (int64_t i = 0; i < c; ++i) {
      gamma_beta[i] = this->weight_.value(0, i);
      gamma_beta[c + i] = this->bias_.value(0, i);
    }
    S* p = params_.get();
    device_->Upload(p, gamma_beta.data(), gamma_beta.size(), CopyKind::kParameter);
    const std::size_t groups = static_cast<std::size_t>(shape.n) * this->groups_;
    S* mean = stats_.Reserve(2 * groups);
    device_->GnForward(x, ShapeOf(shape), this->groups_, this->eps_, p, p + c, y, mean, mean + groups);
  }

  // Backward on a gradient already in device memory, of the last forward's
  // shape; `dx` on this device. dgamma, dbeta come to the host as in Backward.
  void BackwardOnDevice(const S* dy, S* dx) {
    const int64_t c = this->channels_;
    const std::size_t groups = static_cast<std::size_t>(shape_.n) * this->groups_;
    S* p = params_.get();
    S* mean = stats_.get();
    device_->GnBackward(dy, x_in_, ShapeOf(shape_), this->groups_, mean, mean + groups, p, dx, p + 2 * c, p + 3 * c);
    std::vector<S> grads(2 * c);  // dgamma, dbeta
    device_->Download(grads.data(), p + 2 * c, grads.size(), CopyKind::kParameter);
    for (int64_t i = 0; i < c; ++i) {
      this->weight_.grad(0, i) += grads[i];
      this->bias_.grad(0, i) += grads[c + i];
    }
  }

  Device<S>& device() { return *device_; }

 private:
  Device<S>* device_;
  DeviceArray<S> x_, dy_, out_;
  DeviceArray<S> stats_;   // N x G means, then N x G invstds, of the last Forward
  DeviceArray<S> params_;  // gamma, beta (uploaded each Forward), dgamma, dbeta
  nn::Tensor4<S> shape_;   // the last Forward's shape (no data)
  const S* x_in_ = nullptr;  // the last Forward's input (device; x_ or the caller's)
};

template <typename S>
nn::NormFactory<S> DeviceGroupNormFactory(Device<S>* device, int groups, double eps = 1e-5) {
  if (device == nullptr) throw std::invalid_argument("DeviceGroupNormFactory: no device");
  return [device, groups, eps](int channels) -> std::unique_ptr<nn::NormLayer<S>> {
    return std::make_unique<DeviceGroupNorm<S>>(device, channels, groups, eps);
  };
}

}  // namespace ddp::device
