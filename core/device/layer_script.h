// (tests) One fixed script run through a norm layer wherever it computes, so
// that the device layers can be compared with core/nn's Eigen layers (and the
// CUDA device with the emulated one) output for output: three training steps
// (fresh x and dy each, the parameters moved between steps as an optimizer
// would, so each Forward must upload them again), then an eval Forward and
// Backward. x has channel c centred on 1 + c; dy has mean 0, as gradients do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/norm_layer.h"
#include "core/nn/param.h"
#include "core/nn/rng.h"

namespace ddp::device::testing {

struct Output {
  std::string name;  // "step 0 y", "eval dx", ...
  std::vector<double> values;
};

template <typename S>
std::vector<double> Values(const nn::Vector<S>& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

template <typename S>
std::vector<Output> RunScript(nn::NormLayer<S>& layer, int n, int h, int w, uint64_t seed) {
  nn::Rng rng(seed);
  const int c = layer.channels();
  const auto fill = [&](nn::Tensor4<S>& t, bool centred) {
    for (int i = 0; i < t.n; ++i) {
      for (int ch = 0; ch < c; ++ch) {
        for (int64_t p = 0; p < t.PlaneSize(); ++p) {
          t.Plane(i, ch)[p] = static_cast<S>(rng.Normal(centred ? 0.0 : 1.0 + ch, 1.0 + 0.25 * ch));
        }
      }
    }
  };
  std::vector<Output> out;
  for (int step = 0; step < 4; ++step) {
    const bool training = step < 3;
    const std::string at = training ? "step " + std::to_string(step) + " " : "eval ";
    layer.SetTraining(training);
    nn::ZeroGrads(layer.Params());
    nn::Tensor4<S> x(n, c, h, w), dy(n, c, h, w);
    fill(x, false);
    fill(dy, true);
    out.push_back({at + "y", Values(layer.Forward(x).data)});
    out.push_back({at + "dx", Values(layer.Backward(dy).data)});
    out.push_back({at + "param grads", Values(nn::FlattenGrads(layer.Params()))});
    if (!layer.Buffers().empty()) out.push_back({at + "running stats", Values(nn::FlattenBuffers(layer.Buffers()))});
    // An optimizer's step, the same on every side: gamma and beta change.
    for (auto& p : layer.Params()) p.param->value -= S(0.1) * p.param->grad;
  }
  return out;
}

}  // namespace ddp::device::testing
