#include "core/metrics/binary.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddp::metrics {
namespace {

struct Counts {
  int64_t positives = 0;
  int64_t negatives = 0;
};

void CheckLengths(size_t a, size_t b) {
  if (a != b) {
    throw std::invalid_argument(
        "Found input variables with inconsistent numbers of samples: [" + std::to_string(b) +
        ", " + std::to_string(a) + "]");
  }
  if (a == 0) {
    throw std::invalid_argument(
        "Found array with 0 sample(s) (shape=(0,)) while a minimum of 1 is required.");
  }
}

// Validates as sklearn does (in its order: lengths, finiteness) plus 0/1
// labels, and counts the classes.
Counts Validate(std::span<const double> scores, std::span<const int> labels) {
  CheckLengths(scores.size(), labels.size());
  for (double s : scores) {
    if (std::isnan(s)) throw std::invalid_argument("Input contains NaN.");
    if (std::isinf(s)) {
      throw std::invalid_argument(
          "Input contains infinity or a value too large for dtype('float64').");
    }
  }
  Counts c;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == 1) {
      ++c.positives;
    } else if (labels[i] == 0) {
      ++c.negatives;
    } else {
      throw std::invalid_argument("labels must be 0 or 1, got " + std::to_string(labels[i]) +
                                  " at position " + std::to_string(i));
    }
  }
  return c;
}

// Sample order by score, descending.
std::vector<size_t> DescendingOrder(std::span<const double> scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

}  // namespace

double RocAuc(std::span<const double> scores, std::span<const int> labels) {
  const Counts c = Validate(scores, labels);
  if (c.positives == 0 || c.negatives == 0) {
    throw std::invalid_argument(
        "Only one class present in y_true. ROC AUC score is not defined in that case.");
  }
  const std::vector<size_t> order = DescendingOrder(scores);
  // 2U = sum over positives of 2 * (negatives scored strictly lower) +
  // (negatives tied with it); exact in 128-bit integers.
  unsigned __int128 twice_u = 0;
  int64_t negatives_below = c.negatives;
  for (size_t start = 0; start < order.size();) {
    size_t end = start;
    int64_t p = 0, q = 0;
    while (end < order.size() && scores[order[end]] == scores[order[start]]) {
      (labels[order[end]] == 1 ? p : q) += 1;
      ++end;
    }
    negatives_below -= q;
    twice_u += static_cast<unsigned __int128>(p) *
               static_cast<unsigned __int128>(2 * negatives_below + q);
    start = end;
  }
  const unsigned __int128 twice_pairs = static_cast<unsigned __int128>(2) *
                                        static_cast<unsigned __int128>(c.positives) *
                                        static_cast<unsigned __int128>(c.negatives);
  return static_cast<double>(static_cast<long double>(twice_u) /
                             static_cast<long double>(twice_pairs));
}

double AveragePrecision(std::span<const double> scores, std::span<const int> labels) {
  const Counts c = Validate(scores, labels);
  if (c.positives == 0) {
    throw std::invalid_argument(
        "No positive class found in y_true: average precision is undefined (sklearn "
        "warns and returns -0.0)");
  }
  const std::vector<size_t> order = DescendingOrder(scores);
  // AP = (1/P) sum_k p_k * tp_k / (tp_k + fp_k) over distinct thresholds k.
  long double sum = 0.0L, compensation = 0.0L;
  int64_t tp = 0, fp = 0;
  for (size_t start = 0; start < order.size();) {
    size_t end = start;
    int64_t p = 0;
    while (end < order.size() && scores[order[end]] == scores[order[start]]) {
      (labels[order[end]] == 1 ? p : fp) += 1;
      ++end;
    }
    tp += p;
    if (p > 0) {
      const long double term = static_cast<long double>(p) * static_cast<long double>(tp) /
                               static_cast<long double>(tp + fp);
      const long double t = sum + term;  // Neumaier: keep the lost low bits
      compensation += std::fabs(sum) >= std::fabs(term) ? (sum - t) + term : (term - t) + sum;
      sum = t;
    }
    start = end;
  }
  return static_cast<double>((sum + compensation) / static_cast<long double>(c.positives));
}

double Accuracy(std::span<const int> predictions, std::span<const int> labels) {
  CheckLengths(predictions.size(), labels.size());
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

double BinaryAccuracy(std::span<const double> scores, std::span<const int> labels,
                      double threshold) {
  Validate(scores, labels);
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    correct += (scores[i] >= threshold ? 1 : 0) == labels[i];
  }
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace ddp::metrics
