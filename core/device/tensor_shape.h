// What the device layers keep of a host tensor: its shape.
#pragma once

#include <stdexcept>
#include <string>

#include "core/device/device.h"
#include "core/nn/tensor.h"

namespace ddp::device {

template <typename S>
NchwShape ShapeOf(const nn::Tensor4<S>& t) {
  return {t.n, t.c, t.PlaneSize()};
}

// A tensor of t's shape holding no values (for shape checks and messages).
template <typename S>
nn::Tensor4<S> ShapeOnly(const nn::Tensor4<S>& t) {
  nn::Tensor4<S> out;
  out.n = t.n;
  out.c = t.c;
  out.h = t.h;
  out.w = t.w;
  return out;
}

// core/nn's error for a gradient whose shape is not the last Forward's.
template <typename S>
void CheckGradShape(const nn::Tensor4<S>& dy, const nn::Tensor4<S>& forward, const char* layer) {
  if (!dy.SameShape(forward)) {
    throw std::invalid_argument(std::string(layer) + "::Backward: gradient " + dy.ShapeString() +
                                " does not match the last Forward " + forward.ShapeString());
  }
}

// A layer's host call around its on-device one: uploads `in` into `in_buf`
// (activation), runs body(in on the device, out on the device) with `out_buf`
// sized as `in`, downloads the result (activation).
template <typename S, typename Body>
nn::Tensor4<S> ThroughDevice(Device<S>& device, DeviceArray<S>& in_buf, DeviceArray<S>& out_buf,
                             const nn::Tensor4<S>& in, Body&& body) {
  S* in_d = in_buf.Reserve(in.Size());
  device.Upload(in_d, in.data.data(), in.Size(), CopyKind::kActivation);
  S* out_d = out_buf.Reserve(in.Size());
  body(in_d, out_d);
  nn::Tensor4<S> out = nn::EmptyLike(in);
  device.Download(out.data.data(), out_d, out.Size(), CopyKind::kActivation);
  return out;
}

}  // namespace ddp::device
