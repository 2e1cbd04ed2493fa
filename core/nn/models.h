// The two reference models. Both take a NormFactory, so BatchNorm, GroupNorm or
// a synchronized BatchNorm is chosen by the caller, and both initialise their
// weights from a seed deterministically (Rng::Uniform only; see rng.h).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/nn/conv2d.h"
#include "core/nn/global_avg_pool.h"
#include "core/nn/linear.h"
#include "core/nn/norm_layer.h"
#include "core/nn/param.h"
#include "core/nn/relu.h"
#include "core/nn/rng.h"

namespace ddp::nn {

struct MlpOptions {
  int in_features = 8;
  int hidden = 16;
  uint64_t seed = 0;
};

// Tabular / binary model: in -> hidden -> norm -> ReLU -> hidden -> norm ->
// ReLU -> 1 logit (train with BceWithLogits). Input N x in, output N x 1.
template <typename S>
class Mlp {
 public:
  Mlp(MlpOptions opts, const NormFactory<S>& norm)
      : fc1_(opts.in_features, opts.hidden), fc2_(opts.hidden, opts.hidden), fc3_(opts.hidden, 1),
        norm1_(norm(opts.hidden)), norm2_(norm(opts.hidden)) {
    if (!norm1_ || !norm2_) throw std::invalid_argument("Mlp: the norm factory returned null");
    Rng rng(opts.seed);
    fc1_.Init(rng);
    fc2_.Init(rng);
    fc3_.Init(rng);
  }

  Matrix<S> Forward(const Matrix<S>& x) {
    Matrix<S> h = relu1_.Forward(ToRows(norm1_->Forward(FromRows(fc1_.Forward(x)))));
    h = relu2_.Forward(ToRows(norm2_->Forward(FromRows(fc2_.Forward(h)))));
    return fc3_.Forward(h);
  }

  // dlogits: N x 1. Accumulates every parameter's gradient; returns dx.
  Matrix<S> Backward(const Matrix<S>& dlogits) {
    Matrix<S> g = fc3_.Backward(dlogits);
    g = fc2_.Backward(ToRows(norm2_->Backward(FromRows(relu2_.Backward(g)))));
    return fc1_.Backward(ToRows(norm1_->Backward(FromRows(relu1_.Backward(g)))));
  }

  void SetTraining(bool training) {
    norm1_->SetTraining(training);
    norm2_->SetTraining(training);
  }

  // Registration order: fc1, norm1, fc2, norm2, fc3.
  ParamList<S> Params() {
    ParamList<S> list;
    AppendPrefixed(fc1_.Params(), "fc1.", &list);
    AppendPrefixed(norm1_->Params(), "norm1.", &list);
    AppendPrefixed(fc2_.Params(), "fc2.", &list);
    AppendPrefixed(norm2_->Params(), "norm2.", &list);
    AppendPrefixed(fc3_.Params(), "fc3.", &list);
    return list;
  }

  BufferList<S> Buffers() {
    BufferList<S> list;
    AppendPrefixed(norm1_->Buffers(), "norm1.", &list);
    AppendPrefixed(norm2_->Buffers(), "norm2.", &list);
    return list;
  }

  NormLayer<S>& norm1() { return *norm1_; }
  NormLayer<S>& norm2() { return *norm2_; }

 private:
  Linear<S> fc1_, fc2_, fc3_;
  std::unique_ptr<NormLayer<S>> norm1_, norm2_;
  Relu<S> relu1_, relu2_;
};

struct TinyCnnOptions {
  int in_channels = 3;
  int width1 = 8;
  int width2 = 16;
  int num_classes = 4;
  uint64_t seed = 0;
};

// Small-image model: conv3x3(pad 1) -> norm -> ReLU -> conv3x3(stride 2,
// pad 1) -> norm -> ReLU -> global average pool -> linear -> num_classes
// logits (train with SoftmaxCrossEntropy). Input N x in_channels x H x W
// (e.g. 3 x 8 x 8), output N x num_classes. The convolutions have no bias:
// the norm layer right after each one has its own.
template <typename S>
class TinyCnn {
 public:
  TinyCnn(TinyCnnOptions opts, const NormFactory<S>& norm)
      : conv1_(opts.in_channels, opts.width1, Conv2dOptions{.kernel = 3, .stride = 1, .padding = 1, .bias = false}),
        conv2_(opts.width1, opts.width2, Conv2dOptions{.kernel = 3, .stride = 2, .padding = 1, .bias = false}),
        fc_(opts.width2, opts.num_classes), norm1_(norm(opts.width1)), norm2_(norm(opts.width2)) {
    if (!norm1_ || !norm2_) throw std::invalid_argument("TinyCnn: the norm factory returned null");
    Rng rng(opts.seed);
    conv1_.Init(rng);
    conv2_.Init(rng);
    fc_.Init(rng);
  }

  Matrix<S> Forward(const Tensor4<S>& x) {
    Tensor4<S> h = relu1_.Forward(norm1_->Forward(conv1_.Forward(x)));
    h = relu2_.Forward(norm2_->Forward(conv2_.Forward(h)));
    return fc_.Forward(pool_.Forward(h));
  }

  Tensor4<S> Backward(const Matrix<S>& dlogits) {
    Tensor4<S> g = pool_.Backward(fc_.Backward(dlogits));
    g = conv2_.Backward(norm2_->Backward(relu2_.Backward(g)));
    return conv1_.Backward(norm1_->Backward(relu1_.Backward(g)));
  }

  void SetTraining(bool training) {
    norm1_->SetTraining(training);
    norm2_->SetTraining(training);
  }

  // Registration order: conv1, norm1, conv2, norm2, fc.
  ParamList<S> Params() {
    ParamList<S> list;
    AppendPrefixed(conv1_.Params(), "conv1.", &list);
    AppendPrefixed(norm1_->Params(), "norm1.", &list);
    AppendPrefixed(conv2_.Params(), "conv2.", &list);
    AppendPrefixed(norm2_->Params(), "norm2.", &list);
    AppendPrefixed(fc_.Params(), "fc.", &list);
    return list;
  }

  BufferList<S> Buffers() {
    BufferList<S> list;
    AppendPrefixed(norm1_->Buffers(), "norm1.", &list);
    AppendPrefixed(norm2_->Buffers(), "norm2.", &list);
    return list;
  }

  NormLayer<S>& norm1() { return *norm1_; }
  NormLayer<S>& norm2() { return *norm2_; }

 private:
  Conv2d<S> conv1_, conv2_;
  Linear<S> fc_;
  std::unique_ptr<NormLayer<S>> norm1_, norm2_;
  Relu<S> relu1_, relu2_;
  GlobalAvgPool<S> pool_;
};

}  // namespace ddp::nn
