// (tests) What a gradient kernel's float or double output must be, judged
// from the kernel's own inputs: the exact value, computed in long double from
// the very inputs the kernel was given (its own mean and invstd included),
// and a rigorous bound on the kernel's rounding error, element by element.
//
// Why not the Eigen float result: sum dy * xhat has derivative
// -invstd * sum(dy) with respect to the mean, and the kernels' Welford mean
// and core/nn's two-pass mean are two correctly computed float means that
// differ by an ulp. At the test's shapes that alone moves sum_dy_xhat by up
// to 1.9e-4 of its size (README.md), whatever either side's arithmetic. The
// kernels are therefore checked against exact arithmetic at their own inputs.
//
// The bounds (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
// ed., Lemma 3.1 and section 4.2): each rounding is (1 + d), |d| <= u, u the
// unit roundoff of T; a value that went through at most k roundings is
// exact * (1 + theta_k), |theta_k| <= gamma_k = k u / (1 - k u). A sum whose
// every term went through at most k roundings (its own and the additions
// after it) is off by at most gamma_k * sum |terms|. A segment reduction of
// reduce.h adds every term at most Depth(n) = (terms per thread) +
// log2(threads) + blocks times. A multiply-add counts as two roundings, so
// each bound holds with fma (one rounding) and without (two). The long
// double reference's own error (u = 2^-64 on x86-64) is added to each bound.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/cuda/norm_bodies.h"
#include "core/cuda/reduce.h"

namespace ddp::cuda::testing {

using Real = long double;

template <typename T>
Real Gamma(int64_t k) {
  const Real ku = static_cast<Real>(k) * std::numeric_limits<T>::epsilon() / 2;
  return ku / (1 - ku);
}

// Tolerance factor for k kernel roundings in T plus a reference of
// k + n roundings in Real (n: the length of the reference's sums).
template <typename T>
Real Tol(int64_t k, int64_t n) {
  return Gamma<T>(k) + Gamma<Real>(k + n);
}

// The most additions any term goes through in reduce.h's plan `p` for a
// segment of n values: a thread's chunks times their width, the block's
// tree, the blocks.
inline int64_t Depth(const ReducePlan& p, int64_t n) {
  const int64_t stride = int64_t{p.blocks} * p.threads;
  const int64_t chunks = (n + p.width - 1) / p.width;
  const int64_t per_thread = (chunks + stride - 1) / stride * p.width;
  return per_thread + (std::bit_width(static_cast<unsigned>(p.threads)) - 1) + p.blocks;
}

// Per output element: the exact value and the bound on |kernel - value|.
struct Bounded {
  std::vector<Real> value;
  std::vector<Real> bound;
};

struct BoundCheck {
  double ratio;      // max over elements of |got - value| / bound (inf for NaN)
  double rel_err;    // max |got - value| / max |value|
  double rel_bound;  // max bound / max |value|
};

template <typename T>
BoundCheck CheckBound(std::span<const T> got, const Bounded& ref) {
  const double inf = std::numeric_limits<double>::infinity();
  if (got.size() != ref.value.size()) return {inf, inf, 0};
  Real ratio = 0, err = 0, scale = 0, bound = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return {inf, inf, 0};
    const Real e = std::abs(static_cast<Real>(got[i]) - ref.value[i]);
    if (e > 0) ratio = std::max(ratio, ref.bound[i] > 0 ? e / ref.bound[i] : Real(inf));
    err = std::max(err, e);
    scale = std::max(scale, std::abs(ref.value[i]));
    bound = std::max(bound, ref.bound[i]);
  }
  const Real s = scale > 0 ? scale : 1;
  return {static_cast<double>(ratio), static_cast<double>(err / s), static_cast<double>(bound / s)};
}

struct BnGradSumsRef {
  Bounded sum_dy;
  Bounded sum_dy_xhat;
};

// BnLocalGradSums. sum_dy: gamma_D * sum |dy|. sum_dy_xhat = invstd *
// sum dy * (x - mean): per term x - mean and the product (2), the additions
// (D), the final * invstd (1): gamma_{D+3} * invstd * sum |dy| |x - mean|.
// (The kernel before the fix rounded xhat = (x - mean) * invstd per term and
// then the product: also 3 + D, the same bound.)
template <typename T>
BnGradSumsRef BnLocalGradSumsBounds(const T* dy, const T* x, NchwShape s, const T* mean, const T* invstd) {
  const int64_t n = s.n * s.plane;
  const int64_t depth = Depth(ChannelPlan<T>(s), n);
  BnGradSumsRef r;
  for (auto* b : {&r.sum_dy, &r.sum_dy_xhat}) {
    b->value.assign(s.c, 0);
    b->bound.assign(s.c, 0);
  }
  for (int64_t c = 0; c < s.c; ++c) {
    Real sum = 0, abs_sum = 0, cross = 0, abs_cross = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = (k / s.plane * s.c + c) * s.plane + k % s.plane;
      const Real d = dy[i];
      const Real xc = static_cast<Real>(x[i]) - mean[c];
      sum += d;
      abs_sum += std::abs(d);
      cross += d * xc;
      abs_cross += std::abs(d * xc);
    }
    r.sum_dy.value[c] = sum;
    r.sum_dy.bound[c] = Tol<T>(depth, n) * abs_sum;
    r.sum_dy_xhat.value[c] = cross * invstd[c];
    r.sum_dy_xhat.bound[c] = Tol<T>(depth + 3, n + 1) * abs_cross * invstd[c];
  }
  return r;
}

// BnInputGrad: dx = (dy - S1 / M - (x - mean) invstd S2 / M) gamma invstd.
// Roundings along each term: dy 4 (dy - mean_dy, the add, gamma * invstd,
// the product), S1 / M 6 (M converted to T: exact below 2^24; the
// division), the x-hat term 8 (x-hat 2, M and S2 / M 2, product 1, then 3):
// gamma_8 * |gamma| invstd (|dy| + |S1| / M + |x - mean| invstd |S2| / M).
template <typename T>
Bounded BnInputGradBounds(const T* dy, const T* x, NchwShape s, const T* mean, const T* invstd, const T* gamma,
                          const T* sum_dy, const T* sum_dy_xhat, int64_t count) {
  Bounded r{std::vector<Real>(s.Size()), std::vector<Real>(s.Size())};
  const Real m = static_cast<Real>(count);
  for (int64_t i = 0; i < s.Size(); ++i) {
    const int64_t c = (i / s.plane) % s.c;
    const Real inv = invstd[c];
    const Real xhat = (static_cast<Real>(x[i]) - mean[c]) * inv;
    const Real md = sum_dy[c] / m;
    const Real mdx = sum_dy_xhat[c] / m;
    const Real scale = static_cast<Real>(gamma[c]) * inv;
    r.value[i] = (dy[i] - md - xhat * mdx) * scale;
    r.bound[i] = Tol<T>(8, 8) * std::abs(scale) * (std::abs(Real{dy[i]}) + std::abs(md) + std::abs(xhat * mdx));
  }
  return r;
}

struct GnBackwardRef {
  Bounded dx;
  Bounded dgamma;
  Bounded dbeta;
};

// GnBackward, with d = dy * gamma[c], L the group's length and D_g, D_c the
// depths of the group and channel reductions:
//  dbeta[c] = sum dy: gamma_{D_c} * sum |dy|;
//  dgamma[c] = sum dy * xhat, x-hat rounded per term (2) then the product
//    (1): gamma_{D_c+3} * sum |dy| |x - mean| invstd;
//  dx = invstd (d - md - (x - mean) invstd mdx), md = sum d / L and
//    mdx = invstd sum d (x - mean) / L formed in the kernel: md off by
//    gamma_{D_g+4} sum |d| / L (d 1, additions, L converted to T (exact
//    below 2^24), 1 / L and the product), mdx by gamma_{D_g+7} invstd
//    sum |d| |x - mean| / L (d, x - mean and the product 3, additions,
//    * invstd, L, 1 / L and * 1 / L 4); in dx the d term takes 4 roundings,
//    md 3 more, the x-hat term 5 more (x-hat 2, product, add, final): all
//    within gamma_{D_g+12} * invstd * (|d| + sum |d| / L +
//    |x - mean| invstd * invstd sum |d| |x - mean| / L).
template <typename T>
GnBackwardRef GnBackwardBounds(const T* dy, const T* x, NchwShape s, int64_t groups, const T* mean, const T* invstd,
                               const T* gamma) {
  const int64_t cpg = s.c / groups;
  const int64_t len = cpg * s.plane;
  const int64_t nc = s.n * s.plane;
  GnBackwardRef r;
  r.dx = Bounded{std::vector<Real>(s.Size()), std::vector<Real>(s.Size())};
  r.dgamma = Bounded{std::vector<Real>(s.c, 0), std::vector<Real>(s.c, 0)};
  r.dbeta = Bounded{std::vector<Real>(s.c, 0), std::vector<Real>(s.c, 0)};
  std::vector<Real> abs_dy(s.c, 0), abs_dy_xhat(s.c, 0);
  for (int64_t i = 0; i < s.Size(); ++i) {
    const int64_t c = (i / s.plane) % s.c;
    const int64_t ng = i / len;
    const Real d = dy[i];
    const Real xhat = (static_cast<Real>(x[i]) - mean[ng]) * invstd[ng];
    r.dbeta.value[c] += d;
    r.dgamma.value[c] += d * xhat;
    abs_dy[c] += std::abs(d);
    abs_dy_xhat[c] += std::abs(d * xhat);
  }
  const int64_t depth_c = Depth(ChannelPlan<T>(s), nc);
  for (int64_t c = 0; c < s.c; ++c) {
    r.dbeta.bound[c] = Tol<T>(depth_c, nc) * abs_dy[c];
    r.dgamma.bound[c] = Tol<T>(depth_c + 3, nc + 2) * abs_dy_xhat[c];
  }
  const int64_t depth_g = Depth(GroupPlan<T>(s, groups), len);
  for (int64_t ng = 0; ng < s.n * groups; ++ng) {
    const Real inv = invstd[ng];
    Real sd = 0, abs_sd = 0, sdx = 0, abs_sdx = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = ng * len + k;
      const Real d = static_cast<Real>(dy[i]) * gamma[(ng % groups) * cpg + k / s.plane];
      const Real xc = static_cast<Real>(x[i]) - mean[ng];
      sd += d;
      abs_sd += std::abs(d);
      sdx += d * xc;
      abs_sdx += std::abs(d * xc);
    }
    const Real md = sd / len, mdx = inv * sdx / len;
    const Real abs_md = abs_sd / len, abs_mdx = inv * abs_sdx / len;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = ng * len + k;
      const Real d = static_cast<Real>(dy[i]) * gamma[(ng % groups) * cpg + k / s.plane];
      const Real xhat = (static_cast<Real>(x[i]) - mean[ng]) * inv;
      r.dx.value[i] = inv * (d - md - xhat * mdx);
      r.dx.bound[i] = Tol<T>(depth_g + 12, len + 12) * inv * (std::abs(d) + abs_md + std::abs(xhat) * abs_mdx);
    }
  }
  return r;
}

}  // namespace ddp::cuda::testing
