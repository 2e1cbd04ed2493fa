#include "repro/autograd_lost_gather/losses.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ddp::autograd_lost_gather {
namespace {

double Softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

double Sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

// Rows scaled to unit length; `norms` gets the original lengths.
Mat Normalize(const Mat& m, Vec* norms) {
  *norms = m.rowwise().norm();
  Mat out = m;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    if (!((*norms)[i] > 0)) throw std::invalid_argument("InfoNce: an embedding has zero length");
    out.row(i) /= (*norms)[i];
  }
  return out;
}

// Backward of row normalisation: d raw = (d unit - unit (unit . d unit)) / |raw|.
Mat NormalizeBackward(const Mat& unit, const Vec& norms, const Mat& d_unit) {
  Mat d = d_unit;
  for (Eigen::Index i = 0; i < unit.rows(); ++i) {
    const double dot = unit.row(i).dot(d_unit.row(i));
    d.row(i) = (d_unit.row(i) - dot * unit.row(i)) / norms[i];
  }
  return d;
}

}  // namespace

LossGrad SoftAuc(const Mat& scores, std::span<const int> labels) {
  if (scores.cols() != 1 || scores.rows() != static_cast<Eigen::Index>(labels.size())) {
    throw std::invalid_argument("SoftAuc: scores must be N x 1 with N = " +
                                std::to_string(labels.size()));
  }
  std::vector<Eigen::Index> pos, neg;
  for (std::size_t k = 0; k < labels.size(); ++k) (labels[k] == 1 ? pos : neg).push_back(k);
  if (pos.empty() || neg.empty()) {
    throw std::invalid_argument("SoftAuc: needs both classes in the batch");
  }
  const double w = 1.0 / (static_cast<double>(pos.size()) * static_cast<double>(neg.size()));
  LossGrad out;
  out.d_first = Mat::Zero(scores.rows(), 1);
  for (Eigen::Index i : pos) {
    for (Eigen::Index j : neg) {
      const double margin = scores(j, 0) - scores(i, 0);
      out.value += w * Softplus(margin);
      const double g = w * Sigmoid(margin);
      out.d_first(j, 0) += g;
      out.d_first(i, 0) -= g;
    }
  }
  return out;
}

LossGrad InfoNce(const Mat& anchors, const Mat& keys, std::span<const int64_t> positive,
                 double tau, double scale, const KeyGradMask& key_grad) {
  if (anchors.cols() != keys.cols() ||
      anchors.rows() != static_cast<Eigen::Index>(positive.size())) {
    throw std::invalid_argument("InfoNce: shapes do not match");
  }
  Vec a_norm, k_norm;
  const Mat a = Normalize(anchors, &a_norm);
  const Mat k = Normalize(keys, &k_norm);
  const Mat logits = (a * k.transpose()) / tau;  // n x M
  // G_ij = d L / d logit_ij * (1 / tau) = scale * (softmax_ij - [j == p_i]) / tau.
  Mat g(logits.rows(), logits.cols());
  LossGrad out;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const int64_t p = positive[static_cast<std::size_t>(i)];
    if (p < 0 || p >= keys.rows()) throw std::invalid_argument("InfoNce: positive out of range");
    const double mx = logits.row(i).maxCoeff();
    g.row(i) = (logits.row(i).array() - mx).exp().matrix();
    const double sum = g.row(i).sum();
    out.value += scale * (std::log(sum) + mx - logits(i, p));
    g.row(i) *= scale / (sum * tau);
    g(i, p) -= scale / tau;
  }
  const Mat d_a = g * k;
  if (key_grad) {
    for (Eigen::Index i = 0; i < g.rows(); ++i) {
      for (Eigen::Index j = 0; j < g.cols(); ++j) {
        if (!key_grad(i, j)) g(i, j) = 0;
      }
    }
  }
  const Mat d_k = g.transpose() * a;
  out.d_first = NormalizeBackward(a, a_norm, d_a);
  out.d_second = NormalizeBackward(k, k_norm, d_k);
  return out;
}

double TopOneRetrieval(const Mat& anchors, const Mat& keys, std::span<const int64_t> positive) {
  if (anchors.rows() == 0) throw std::invalid_argument("TopOneRetrieval: no anchors");
  Vec a_norm, k_norm;
  const Mat sim = Normalize(anchors, &a_norm) * Normalize(keys, &k_norm).transpose();
  int64_t hits = 0;
  for (Eigen::Index i = 0; i < sim.rows(); ++i) {
    Eigen::Index best = 0;
    sim.row(i).maxCoeff(&best);
    hits += best == positive[static_cast<std::size_t>(i)];
  }
  return static_cast<double>(hits) / static_cast<double>(sim.rows());
}

}  // namespace ddp::autograd_lost_gather
