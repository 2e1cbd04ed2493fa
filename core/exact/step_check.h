// Per-step exactness: the verdict of a fix that trains.
//
// A fix is exact when every distributed step, started from the same
// parameters and buffers as the one-process step, produces the same outputs
// (gradients after averaging, updated parameters, running statistics). The
// caller keeps the two computations in lockstep (teacher forcing: after each
// step one side adopts the other's state), so a rounding difference of one
// step cannot grow over the next ones, and feeds each step's outputs here.
// A free-running trajectory's final deviation may be recorded beside it
// (`trajectory_rel_err`), but only as information: over many steps of
// momentum SGD it measures how chaotic the training is, not the fix.
//
//   exact::StepCheck check(exact::kDoubleTolerance);
//   for (each step s) {
//     ... both sides start from the same state, run step s ...
//     check.Compare("grad", s, ddp_grad, one_grad);
//     check.Compare("param", s, ddp_param, one_param);
//   }
//   record.measured["step_check"] = check.ToJson();
//   record.verdict = check.exact() ? kExact : kInexact;
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "core/results/json.h"

namespace ddp::exact {

// "agree to 1e-12 relative (double; 1e-5 float)".
inline constexpr double kDoubleTolerance = 1e-12;
inline constexpr double kFloatTolerance = 1e-5;

// Normwise relative error: max_i |got_i - want_i| / max_i |want_i| (with
// 0/0 = 0, and a size mismatch or a non-finite value = +inf). Normwise,
// because an element that is ~0 in both (a gradient of a saturated unit)
// would make an elementwise ratio meaningless.
double NormwiseRelError(std::span<const double> got, std::span<const double> want);
double NormwiseRelError(std::span<const float> got, std::span<const float> want);

class StepCheck {
 public:
  explicit StepCheck(double tolerance = kDoubleTolerance) : tolerance_(tolerance) {}

  // One quantity ("grad", "param", "running_stats", ...) of step `step`.
  // Returns its relative error.
  double Compare(const std::string& quantity, std::int64_t step, std::span<const double> got,
                 std::span<const double> want);
  double Compare(const std::string& quantity, std::int64_t step, std::span<const float> got,
                 std::span<const float> want);
  // An error computed elsewhere (e.g. a scalar loss).
  void Add(const std::string& quantity, std::int64_t step, double rel_error);

  // Folds another check in (another seed, another rank).
  void Merge(const StepCheck& other);

  double tolerance() const { return tolerance_; }
  // Steps compared at least once.
  std::int64_t steps() const { return steps_; }
  // Worst error over every quantity and step (0 when nothing was compared).
  double worst() const { return worst_; }
  // Worst error of one quantity; -1 when it was never compared.
  double worst(const std::string& quantity) const;
  // At least one step compared, and every error <= tolerance.
  bool exact() const { return steps_ > 0 && worst_ <= tolerance_; }

  // {"tolerance", "steps_checked", "worst_rel_err", "worst_quantity",
  //  "worst_step", "rel_err": {quantity: worst, ...}}
  results::Json ToJson() const;
  // Inverse of ToJson (rank 0's check comes back to the parent as JSON).
  // Throws std::invalid_argument on a malformed object.
  static StepCheck FromJson(const results::Json& j);

 private:
  double tolerance_;
  std::int64_t steps_ = 0;
  std::int64_t last_step_ = -1;  // counts distinct consecutive steps
  double worst_ = 0;
  std::string worst_quantity_;
  std::int64_t worst_step_ = -1;
  std::map<std::string, double> per_quantity_;
};

}  // namespace ddp::exact
