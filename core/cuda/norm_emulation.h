// norm_kernels.h's API run on the host: the kernels' own functors
// (norm_bodies.h) in the kernels' reduction order (reduce_emulation.h), on
// host pointers. With M = FusedMulAdd (the kernels' policy) the results are
// the kernels' bits: the emulation reproduces every float error the H100
// printed for norm_kernels_test at bd4d2aa (core/cuda/README.md). M =
// SeparateMulAdd is the same code with every multiply-add rounded twice.
//
// Arguments as norm_kernels.h requires them; they are not checked here (the
// kernels' host wrappers check them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/cuda/grid_stride.h"
#include "core/cuda/norm_bodies.h"
#include "core/cuda/reduce.h"
#include "core/cuda/reduce_emulation.h"

namespace ddp::cuda::emulate {

template <typename M = FusedMulAdd, typename T>
void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2) {
  EmulateReduceSegments<WelfordAcc<T, M>>(shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
                                          internal::ChannelWelfordPush<T, M>{x, shape.c, PlaneDivider(shape)},
                                          internal::WriteMeanM2<T, M>{mean, m2});
}

template <typename M = FusedMulAdd, typename T>
int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                     T* m2) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  internal::MergeStatsBody<T> body{counts.data(), static_cast<int>(counts.size()), means, m2s, channels, mean, m2};
  EmulateElementwise(channels, body);
  return total;
}

template <typename M = FusedMulAdd, typename T>
void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                     T* invstd, T* running_mean, T* running_var) {
  EmulateElementwise(channels, internal::Finalize<T, M>{mean, m2, static_cast<T>(count), static_cast<T>(eps),
                                                        static_cast<T>(momentum), invstd, running_mean, running_var});
}

template <typename M = FusedMulAdd, typename T>
void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd) {
  EmulateElementwise(channels, internal::InvstdFromVar<T>{var, static_cast<T>(eps), invstd});
}

template <typename M = FusedMulAdd, typename T>
void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma, const T* beta, T* y) {
  EmulateChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                   internal::Normalize<T, M>{x, mean, invstd, gamma, beta, y, ChannelDivider(shape), PlaneDivider(shape)});
}

template <typename M = FusedMulAdd, typename T>
void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, T* sum_dy,
                     T* sum_dy_xhat) {
  EmulateReduceSegments<SumPairAcc<T, M>>(shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
                                          internal::ChannelGradPush<T, M>{dy, x, mean, shape.c, PlaneDivider(shape)},
                                          internal::WriteCentredSums<T, M>{sum_dy, sum_dy_xhat, invstd, T(1)});
}

template <typename M = FusedMulAdd, typename T>
void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                 const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx) {
  EmulateChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                   internal::InputGrad<T, M>{dy, x, mean, invstd, gamma, sum_dy, sum_dy_xhat, static_cast<T>(count), dx,
                                             ChannelDivider(shape), PlaneDivider(shape)});
}

template <typename M = FusedMulAdd, typename T>
void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta, T* y,
               T* mean, T* invstd) {
  const int64_t len = shape.c / groups * shape.plane;
  if (len == 0) return;
  EmulateReduceSegments<WelfordAcc<T, M>>(
      shape.n * groups, len, GroupPlan<T>(shape, groups), internal::GroupWelfordPush<T, M>{x, len},
      internal::WriteGroupStats<T, M>{mean, invstd, static_cast<T>(len), static_cast<T>(eps)});
  EmulateChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                   internal::GroupNormalize<T, M>{x, mean, invstd, gamma, beta, y, ChannelDivider(shape),
                                                 PlaneDivider(shape), IndexDivider::For(len, shape.Size())});
}

template <typename M = FusedMulAdd, typename T>
void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean, const T* invstd,
                const T* gamma, T* dx, T* dgamma, T* dbeta) {
  const int64_t cpg = shape.c / groups;
  const int64_t len = cpg * shape.plane;
  EmulateReduceSegments<SumPairAcc<T, M>>(
      shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
      internal::GroupParamGradPush<T, M>{dy, x, mean, invstd, shape.c, groups, cpg, PlaneDivider(shape)},
      internal::WriteSumPair<T, M>{dbeta, dgamma});
  const int64_t segments = shape.n * groups;
  if (segments == 0 || len == 0) return;
  std::vector<T> means(static_cast<std::size_t>(segments) * 2);
  T* mean_d = means.data();
  T* mean_d_xhat = means.data() + segments;
  EmulateReduceSegments<SumPairAcc<T, M>>(
      segments, len, GroupPlan<T>(shape, groups),
      internal::GroupGradPush<T, M>{dy, x, mean, gamma, groups, cpg, PlaneDivider(shape), len},
      internal::WriteCentredSums<T, M>{mean_d, mean_d_xhat, invstd, T(1) / static_cast<T>(len)});
  EmulateChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                   internal::GroupInputGrad<T, M>{dy, x, mean, invstd, gamma, mean_d, mean_d_xhat, dx,
                                                  ChannelDivider(shape), PlaneDivider(shape),
                                                  IndexDivider::For(len, shape.Size())});
}

}  // namespace ddp::cuda::emulate
