// The interface every normalisation layer implements, and the factory type the
// reference models take, so BatchNorm, GroupNorm or a synchronized BatchNorm
// can be swapped in without touching model code.
#pragma once

#include <functional>
#include <memory>

#include "core/nn/param.h"
#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
class NormLayer {
 public:
  virtual ~NormLayer() = default;

  // x is N x C x H x W. Layers over N x C batches (BatchNorm1d, GroupNorm in an
  // MLP) take FromRows(x), i.e. H = W = 1.
  virtual Tensor4<S> Forward(const Tensor4<S>& x) = 0;
  // Returns dx for the last Forward and accumulates parameter gradients.
  virtual Tensor4<S> Backward(const Tensor4<S>& dy) = 0;
  // true: normalise with batch statistics (and update running ones, if any).
  virtual void SetTraining(bool training) = 0;
  virtual ParamList<S> Params() = 0;
  virtual BufferList<S> Buffers() = 0;
  virtual int channels() const = 0;
};

// Builds the norm layer for a given channel count.
template <typename S>
using NormFactory = std::function<std::unique_ptr<NormLayer<S>>(int channels)>;

}  // namespace ddp::nn
