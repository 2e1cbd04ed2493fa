// Streaming (sum, count) accumulators: the right thing to all_reduce.
//
// Averaging per-rank means (mean_of_means) is biased when ranks hold
// different numbers of samples; reducing (sum, count) and dividing once is
// exact. Pack()/Unpack() give the two doubles a SUM all_reduce combines.
// The sum is kept in long double (64-bit mantissa on x86) with Neumaier
// compensation, so the order in which values arrive barely matters; the
// count is an integer (exact in the packed double up to 2^53).
#pragma once

#include <array>
#include <cstdint>

namespace ddp::metrics {

class SumCount {
 public:
  void Add(double value);
  // Adds a partial (sum, count), e.g. one batch's.
  void AddPartial(double sum, int64_t count);
  void Merge(const SumCount& other);

  double Sum() const { return static_cast<double>(sum_ + compensation_); }
  int64_t Count() const { return count_; }
  // Throws std::domain_error when Count() == 0.
  double Mean() const;

  // {sum, count} as doubles, for a SUM all_reduce; Unpack reverses it
  // (throws std::invalid_argument for a negative or non-integer count).
  std::array<double, 2> Pack() const;
  static SumCount Unpack(const std::array<double, 2>& packed);

 private:
  void AddToSum(long double value);
  long double sum_ = 0.0L;
  long double compensation_ = 0.0L;
  int64_t count_ = 0;
};

}  // namespace ddp::metrics
