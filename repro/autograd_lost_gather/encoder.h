// The network that produces the embeddings: in -> hidden -> ReLU -> hidden
// -> ReLU -> out, Linear layers from core/nn, double precision.
//
// Why not core/nn's Mlp: it ends in one logit and normalises with a norm
// layer; a BatchNorm there would couple the samples of a rank's batch (a
// different bug, small_batch_bn), and the InfoNCE loss needs D-dimensional
// embeddings. Every sample is processed independently here, so a rank's
// slice of a batch gives exactly the rows the whole batch would.
#pragma once

#include <cstdint>

#include "core/nn/linear.h"
#include "core/nn/param.h"
#include "core/nn/relu.h"
#include "core/nn/rng.h"
#include "core/nn/tensor.h"

namespace ddp::autograd_lost_gather {

using Mat = nn::Matrix<double>;
using Vec = nn::Vector<double>;

struct EncoderOptions {
  int in_features = 8;
  int hidden = 32;
  int out_features = 1;  // 1: a score (soft-AUC loss); D > 1: an embedding
  uint64_t seed = 0;
};

class Encoder {
 public:
  explicit Encoder(const EncoderOptions& o)
      : fc1_(o.in_features, o.hidden), fc2_(o.hidden, o.hidden), fc3_(o.hidden, o.out_features) {
    nn::Rng rng(o.seed);
    fc1_.Init(rng);
    fc2_.Init(rng);
    fc3_.Init(rng);
  }

  // x: N x in; returns N x out. Keeps what Backward needs (one batch).
  Mat Forward(const Mat& x) {
    Mat h = relu1_.Forward(fc1_.Forward(x));
    h = relu2_.Forward(fc2_.Forward(h));
    return fc3_.Forward(h);
  }

  // dy: N x out for the last Forward. Accumulates parameter gradients.
  void Backward(const Mat& dy) {
    Mat g = relu2_.Backward(fc3_.Backward(dy));
    g = relu1_.Backward(fc2_.Backward(g));
    fc1_.Backward(g);
  }

  nn::ParamList<double> Params() {
    nn::ParamList<double> list;
    nn::AppendPrefixed(fc1_.Params(), "fc1.", &list);
    nn::AppendPrefixed(fc2_.Params(), "fc2.", &list);
    nn::AppendPrefixed(fc3_.Params(), "fc3.", &list);
    return list;
  }

 private:
  nn::Linear<double> fc1_, fc2_, fc3_;
  nn::Relu<double> relu1_, relu2_;
};

}  // namespace ddp::autograd_lost_gather
