// Division of a non-negative element index by a divisor fixed for a whole
// launch (a plane, a channel count, a group length), as the norm kernels do
// for every element to find its channel or group.
//
// Why: a 64-bit integer division is a long software routine on the GPU, and
// an elementwise kernel doing two per element (index / plane, then % c) is
// bound by them, not by memory: on the H100 of 2026-11-27 bn_normalize moved
// 0.55 of the copy's GB/s in float against 0.87 in double, the same
// instructions over half the bytes. Where the divisor and every dividend
// are below 2^31 (every shape the suite uses), Div is one 32-bit multiply-high,
// an add and a shift (the round-up multiplier of Granlund and Montgomery,
// "Division by invariant integers using multiplication", PLDI 1994);
// otherwise it is the plain 64-bit division. Either way the quotient is
// exact, so the kernels' floating-point results do not change by a bit.
//
// No CUDA header: the host compiler builds this file for the CPU tests.
#pragma once

#include <cstdint>

#include "core/cuda/reduce.h"  // DDP_HD

namespace ddp::cuda {

struct IndexDivider {
  int64_t d = 1;
  uint32_t magic = 0;
  uint32_t shift = 0;
  bool fast = false;  // d and every dividend below 2^31: the multiply-high path

  // For dividends in [0, max_dividend]. d <= 0 makes a divider that must not
  // be used (its launch has no elements: a zero plane or channel count).
  static IndexDivider For(int64_t d, int64_t max_dividend) {
    IndexDivider v;
    v.d = d;
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (d <= 0 || d >= kLimit || max_dividend >= kLimit) return v;
    uint32_t s = 0;
    while ((int64_t{1} << s) < d) ++s;  // 2^s >= d > 2^(s-1)
    // magic = floor(2^32 (2^s - d) / d) + 1, below 2^32 since 2^s - d < d.
    v.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * static_cast<uint64_t>((int64_t{1} << s) - d)) /
                                    static_cast<uint64_t>(d) + 1);
    v.shift = s;
    v.fast = true;
    return v;
  }

  DDP_HD int64_t Div(int64_t n) const {
    if (fast) {
      const auto n32 = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
      const uint32_t hi = __umulhi(n32, magic);
#else
      const auto hi = static_cast<uint32_t>((static_cast<uint64_t>(n32) * magic) >> 32);
#endif
      // hi <= n32 < 2^31, so the sum does not wrap.
      return static_cast<int64_t>((hi + n32) >> shift);
    }
    return n / d;
  }
  DDP_HD int64_t Mod(int64_t n) const { return n - Div(n) * d; }
};

}  // namespace ddp::cuda
