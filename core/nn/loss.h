// Losses with mean reduction (PyTorch's default), returning the loss and its
// gradient with respect to the logits.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>

#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
struct LossAndGrad {
  S loss;
  Matrix<S> grad;  // d loss / d logits, same shape as the logits
};

// nn.CrossEntropyLoss: logits N x K, labels[n] in [0, K).
// loss = mean_n (logsumexp(z_n) - z_n[label_n]); grad = (softmax(z) - onehot) / N.
template <typename S>
LossAndGrad<S> SoftmaxCrossEntropy(const Matrix<S>& logits, std::span<const int> labels) {
  const Eigen::Index n = logits.rows();
  const Eigen::Index k = logits.cols();
  if (n == 0 || k == 0) throw std::invalid_argument("SoftmaxCrossEntropy: empty logits");
  if (static_cast<Eigen::Index>(labels.size()) != n) {
    throw std::invalid_argument("SoftmaxCrossEntropy: " + std::to_string(labels.size()) + " labels for " +
                                std::to_string(n) + " rows");
  }
  LossAndGrad<S> out{S(0), Matrix<S>(n, k)};
  for (Eigen::Index i = 0; i < n; ++i) {
    const int y = labels[i];
    if (y < 0 || y >= k) {
      throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(y) + " outside [0, " +
                                  std::to_string(k) + ")");
    }
    // Shift by the row max so exp never overflows.
    const S max = logits.row(i).maxCoeff();
    const auto shifted = (logits.row(i).array() - max);
    const auto e = shifted.exp();
    const S sum = e.sum();
    out.loss += std::log(sum) - shifted(y);
    out.grad.row(i) = (e / sum).matrix();
    out.grad(i, y) -= S(1);
  }
  const S inv_n = S(1) / static_cast<S>(n);
  out.loss *= inv_n;
  out.grad *= inv_n;
  return out;
}

// nn.BCEWithLogitsLoss: logits and targets of the same shape, targets in [0, 1].
// loss = mean(max(z, 0) - z * t + log1p(exp(-|z|))), stable for any |z|;
// grad = (sigmoid(z) - t) / numel.
template <typename S>
LossAndGrad<S> BceWithLogits(const Matrix<S>& logits, const Matrix<S>& targets) {
  if (logits.size() == 0) throw std::invalid_argument("BceWithLogits: empty logits");
  if (logits.rows() != targets.rows() || logits.cols() != targets.cols()) {
    throw std::invalid_argument("BceWithLogits: logits and targets differ in shape");
  }
  LossAndGrad<S> out{S(0), Matrix<S>(logits.rows(), logits.cols())};
  const S inv_n = S(1) / static_cast<S>(logits.size());
  for (Eigen::Index i = 0; i < logits.size(); ++i) {
    const S z = logits.data()[i];
    const S t = targets.data()[i];
    if (!(t >= S(0) && t <= S(1))) throw std::invalid_argument("BceWithLogits: target outside [0, 1]");
    out.loss += std::max(z, S(0)) - z * t + std::log1p(std::exp(-std::abs(z)));
    // sigmoid without overflow for large |z|.
    const S sig = z >= S(0) ? S(1) / (S(1) + std::exp(-z)) : std::exp(z) / (S(1) + std::exp(z));
    out.grad.data()[i] = (sig - t) * inv_n;
  }
  out.loss *= inv_n;
  return out;
}

}  // namespace ddp::nn
