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

}  // namespace ddp::device
