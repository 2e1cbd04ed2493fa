#include "core/exact/step_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ddp::exact {
namespace {

template <typename S>
double Normwise(std::span<const S> got, std::span<const S> want) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (got.size() != want.size()) return kInf;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    if (!std::isfinite(g) || !std::isfinite(w)) return kInf;
    diff = std::max(diff, std::fabs(g - w));
    scale = std::max(scale, std::fabs(w));
  }
  if (diff == 0) return 0;
  return scale == 0 ? kInf : diff / scale;
}

}  // namespace

double NormwiseRelError(std::span<const double> got, std::span<const double> want) {
  return Normwise(got, want);
}
double NormwiseRelError(std::span<const float> got, std::span<const float> want) {
  return Normwise(got, want);
}

void StepCheck::Add(const std::string& quantity, std::int64_t step, double rel_error) {
  if (step != last_step_) {
    ++steps_;
    last_step_ = step;
  }
  // NaN compares false with everything: count it as the worst possible.
  const double e = std::isnan(rel_error) ? std::numeric_limits<double>::infinity() : rel_error;
  auto [it, inserted] = per_quantity_.emplace(quantity, e);
  if (!inserted) it->second = std::max(it->second, e);
  if (worst_step_ < 0 || e > worst_) {
    worst_ = e;
    worst_quantity_ = quantity;
    worst_step_ = step;
  }
}

double StepCheck::Compare(const std::string& quantity, std::int64_t step,
                          std::span<const double> got, std::span<const double> want) {
  const double e = NormwiseRelError(got, want);
  Add(quantity, step, e);
  return e;
}

double StepCheck::Compare(const std::string& quantity, std::int64_t step,
                          std::span<const float> got, std::span<const float> want) {
  const double e = NormwiseRelError(got, want);
  Add(quantity, step, e);
  return e;
}

void StepCheck::Merge(const StepCheck& other) {
  steps_ += other.steps_;
  for (const auto& [q, e] : other.per_quantity_) {
    auto [it, inserted] = per_quantity_.emplace(q, e);
    if (!inserted) it->second = std::max(it->second, e);
  }
  if (other.worst_step_ >= 0 && (worst_step_ < 0 || other.worst_ > worst_)) {
    worst_ = other.worst_;
    worst_quantity_ = other.worst_quantity_;
    worst_step_ = other.worst_step_;
  }
  tolerance_ = std::max(tolerance_, other.tolerance_);
}

double StepCheck::worst(const std::string& quantity) const {
  const auto it = per_quantity_.find(quantity);
  return it == per_quantity_.end() ? -1 : it->second;
}

results::Json StepCheck::ToJson() const {
  results::Json j = results::Json::object();
  j["tolerance"] = tolerance_;
  j["steps_checked"] = static_cast<long long>(steps_);
  j["worst_rel_err"] = worst_;
  j["worst_quantity"] = worst_quantity_;
  j["worst_step"] = static_cast<long long>(worst_step_);
  results::Json per = results::Json::object();
  for (const auto& [q, e] : per_quantity_) per[q] = e;
  j["rel_err"] = per;
  return j;
}

StepCheck StepCheck::FromJson(const results::Json& j) {
  auto field = [&](const char* name) -> const results::Json& {
    const results::Json* v = Find(j, name);
    if (v == nullptr) throw std::invalid_argument(std::string("step check: missing '") + name + "'");
    return *v;
  };
  StepCheck c(field("tolerance").get<double>());
  c.steps_ = static_cast<std::int64_t>(field("steps_checked").get<double>());
  c.worst_ = field("worst_rel_err").get<double>();
  if (!field("worst_quantity").is_string()) {
    throw std::invalid_argument("step check: 'worst_quantity' is not a string");
  }
  c.worst_quantity_ = field("worst_quantity").get<std::string>();
  c.worst_step_ = static_cast<std::int64_t>(field("worst_step").get<double>());
  const results::Json& per = field("rel_err");
  if (!per.is_object()) throw std::invalid_argument("step check: 'rel_err' is not an object");
  for (const auto& [q, e] : per.items()) c.per_quantity_[q] = e.get<double>();
  return c;
}

}  // namespace ddp::exact
