// Binary-classification metrics equal to scikit-learn's, and accuracy.
//
// Exactness: RocAuc counts concordant pairs in exact integer arithmetic
// (ties count 1/2), so its only rounding is one final division; it equals
// sklearn.metrics.roc_auc_score (trapezoids over distinct thresholds, the
// same quantity) up to sklearn's own float error. AveragePrecision sums one
// term per distinct threshold in long double with Neumaier compensation.
// Both agree with sklearn 1.2.1 to 1e-12 on the golden vectors (heavy ties,
// 1e5 samples), see metrics_golden_test.
#pragma once

#include <span>

namespace ddp::metrics {

// sklearn.metrics.roc_auc_score(labels, scores). Throws std::invalid_argument
// with sklearn's message for an empty input ("Found array with 0 sample(s)
// (shape=(0,)) while a minimum of 1 is required."), one class only ("Only one
// class present in y_true. ROC AUC score is not defined in that case."),
// NaN/inf scores ("Input contains NaN." / "Input contains infinity or a value
// too large for dtype('float64')."), different lengths ("Found input
// variables with inconsistent numbers of samples: [a, b]"); and for a label
// other than 0 or 1 (stricter than sklearn, which accepts any two values).
double RocAuc(std::span<const double> scores, std::span<const int> labels);

// sklearn.metrics.average_precision_score(labels, scores): the step-wise
// sum_k (R_k - R_{k-1}) P_k over distinct thresholds, not interpolated.
// Same errors as RocAuc, except that all-positive input is fine (1.0, as
// sklearn) while all-negative input throws: sklearn returns -0.0 with the
// warning "No positive class found in y_true, recall is set to one for all
// thresholds." — a value nobody should cite, so we refuse.
double AveragePrecision(std::span<const double> scores, std::span<const int> labels);

// Fraction of predictions equal to labels (any class ids). Throws on empty
// input or different lengths.
double Accuracy(std::span<const int> predictions, std::span<const int> labels);

// Accuracy of "score >= threshold means class 1".
double BinaryAccuracy(std::span<const double> scores, std::span<const int> labels,
                      double threshold = 0.5);

}  // namespace ddp::metrics
