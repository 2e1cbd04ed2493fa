#include "core/metrics/streaming.h"

#include <cmath>
#include <stdexcept>

namespace ddp::metrics {

void SumCount::AddToSum(long double value) {
  const long double t = sum_ + value;
  compensation_ += std::fabs(sum_) >= std::fabs(value) ? (sum_ - t) + value : (value - t) + sum_;
  sum_ = t;
}

void SumCount::Add(double value) {
  AddToSum(value);
  ++count_;
}

void SumCount::AddPartial(double sum, int64_t count) {
  if (count < 0) throw std::invalid_argument("SumCount::AddPartial: count must be >= 0");
  AddToSum(sum);
  count_ += count;
}

void SumCount::Merge(const SumCount& other) {
  AddToSum(other.sum_);
  AddToSum(other.compensation_);
  count_ += other.count_;
}

double SumCount::Mean() const {
  if (count_ == 0) throw std::domain_error("SumCount::Mean: no values (count is 0)");
  return static_cast<double>((sum_ + compensation_) / static_cast<long double>(count_));
}

std::array<double, 2> SumCount::Pack() const {
  return {Sum(), static_cast<double>(count_)};
}

SumCount SumCount::Unpack(const std::array<double, 2>& packed) {
  const double count = packed[1];
  if (!(count >= 0.0) || count != std::floor(count) || count > 9007199254740992.0) {
    throw std::invalid_argument("SumCount::Unpack: count must be a non-negative integer");
  }
  SumCount result;
  result.AddPartial(packed[0], static_cast<int64_t>(count));
  return result;
}

}  // namespace ddp::metrics
