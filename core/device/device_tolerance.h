// How closely a step computed with the device layers must agree with the
// one-process step computed with core/nn's Eigen layers (normwise relative
// error, core/exact), per scalar type.
//
// The kernels and Eigen evaluate the same formulas in different orders
// (Welford + Chan per thread block, against two passes), so they agree to
// rounding, not bit for bit.
//  - double: 1e-12, the suite's exactness tolerance. The kernels agreed with
//    Eigen to <= 4.5e-13 on core/cuda's test cases (norm_emulation_test;
//    2.3e-13 on an H100 at bd4d2aa) and well below that on the pairs' steps.
//  - float: 1e-5, core/exact's float tolerance and core/cuda's for the
//    well-conditioned outputs. It holds for inputs whose per-channel mean is
//    not large against their spread, as activations and gradients are; where
//    a sum cancels (core/cuda/README.md, "Float gradient checks") float
//    cannot meet it on either side, and core/cuda judges each kernel by its
//    rounding bound instead.
//
// The values are core/exact's kDoubleTolerance and kFloatTolerance (layers_test
// checks it); not included from there, so that core/exact may use core/device.
#pragma once

namespace ddp::device {

template <typename S>
constexpr double StepTolerance() {
  return sizeof(S) >= 8 ? 1e-12 : 1e-5;
}

}  // namespace ddp::device
