// The two losses, each with its gradient (double precision).
//
// Soft AUC (the "global" loss, metric-as-loss): over scores s (N x 1) and
// labels, with P positives and Q negatives,
//   L = 1/(P Q) * sum_{i pos, j neg} softplus(s_j - s_i),
// a smooth upper bound of 1 - AUC (log2 of it, up to the factor). Every rank
// evaluates it on the same gathered batch.
//
// InfoNCE (the "per-rank" loss, one direction of CLIP's loss, SimCLR's
// cross-rank negatives): anchors A (n x D) against keys K (M x D), cosine
// similarity over temperature tau; anchor i's positive is key positive[i],
// every other key is a negative:
//   l_i = -log softmax_j(cos(A_i, K_j) / tau)[positive[i]],  L = scale * sum_i l_i.
// `key_grad(i, j)` masks which (anchor, key) terms send gradient to key j:
// the one-process predictions of what a lost gather lets through (see
// objective.h); null means every term.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "repro/autograd_lost_gather/encoder.h"

namespace ddp::autograd_lost_gather {

struct LossGrad {
  double value = 0;
  Mat d_first;   // soft AUC: dL/dscores; InfoNCE: dL/dA
  Mat d_second;  // InfoNCE: dL/dK (empty for soft AUC)
};

// Throws std::invalid_argument unless scores is N x 1 with N == labels.size()
// and both classes are present.
LossGrad SoftAuc(const Mat& scores, std::span<const int> labels);

using KeyGradMask = std::function<bool(int64_t anchor, int64_t key)>;

LossGrad InfoNce(const Mat& anchors, const Mat& keys, std::span<const int64_t> positive,
                 double tau, double scale, const KeyGradMask& key_grad = nullptr);

// Fraction of anchors whose most similar key (cosine) is their positive.
double TopOneRetrieval(const Mat& anchors, const Mat& keys, std::span<const int64_t> positive);

}  // namespace ddp::autograd_lost_gather
