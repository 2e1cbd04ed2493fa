#include "core/cuda/norm_kernels.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/cuda/check.h"
#include "core/cuda/launch.cuh"
#include "core/cuda/reduce.h"

namespace ddp::cuda {
namespace {

using internal::LaunchChunks;
using internal::LaunchElementwise;
using internal::ReduceSegments;
using internal::RequireNonNegative;
// The kernels' multiply-add: fma, whatever nvcc's --fmad (reduce.h).
using M = FusedMulAdd;

void CheckShape(const NchwShape& s, const char* fn) {
  if (s.n < 0 || s.c < 0 || s.plane < 0) {
    throw std::invalid_argument(std::string(fn) + ": negative shape (n=" + std::to_string(s.n) + ", c=" +
                                std::to_string(s.c) + ", plane=" + std::to_string(s.plane) + ")");
  }
}

void CheckEps(double eps, const char* fn) {
  if (!(eps > 0)) throw std::invalid_argument(std::string(fn) + ": eps must be > 0");
}

template <int N>
struct Int64Array {
  int64_t v[N];
};

// One channel per index, grid-stride (GridFor caps the grid).
template <typename T>
__global__ void MergeStatsKernel(Int64Array<kMaxRanks> counts, int world, const T* means, const T* m2s,
                                 int64_t channels, T* mean, T* m2) {
  internal::MergeStatsBody<T> body{counts.v, world, means, m2s, channels, mean, m2};
  internal::ForEachStrided(internal::ThisThread(), channels, body);
}

void CheckGroups(const NchwShape& s, int64_t groups, const char* fn) {
  CheckShape(s, fn);
  if (groups <= 0 || s.c % groups != 0) {
    throw std::invalid_argument(std::string(fn) + ": groups must be > 0 and divide channels (channels=" +
                                std::to_string(s.c) + ", groups=" + std::to_string(groups) + ")");
  }
}

}  // namespace

template <typename T>
void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2, cudaStream_t stream) {
  CheckShape(shape, "BnLocalStats");
  ReduceSegments<WelfordAcc<T, M>>(shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
                                   internal::ChannelWelfordPush<T, M>{x, shape.c, PlaneDivider(shape), AllAligned({x})},
                                   internal::WriteMeanM2<T, M>{mean, m2}, stream);
}

template <typename T>
int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                     T* m2, cudaStream_t stream) {
  RequireNonNegative(channels, "BnMergeStats: channels");
  if (counts.empty() || counts.size() > static_cast<std::size_t>(kMaxRanks)) {
    throw std::invalid_argument("BnMergeStats: need 1 to " + std::to_string(kMaxRanks) + " ranks, got " +
                                std::to_string(counts.size()));
  }
  Int64Array<kMaxRanks> c{};
  int64_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    RequireNonNegative(counts[r], "BnMergeStats: count");
    c.v[r] = counts[r];
    total += counts[r];
  }
  if (channels == 0) return total;
  MergeStatsKernel<T><<<internal::GridFor(channels, internal::kElementwiseThreads), internal::kElementwiseThreads,
                        0, stream>>>(c, static_cast<int>(counts.size()), means, m2s, channels, mean, m2);
  DDP_CUDA_CHECK(cudaGetLastError());
  return total;
}

template <typename T>
void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                     T* invstd, T* running_mean, T* running_var, cudaStream_t stream) {
  RequireNonNegative(channels, "BnFinalizeStats: channels");
  CheckEps(eps, "BnFinalizeStats");
  if (count <= 1) {
    throw std::invalid_argument("BnFinalizeStats: expected more than 1 value per channel when training, got " +
                                std::to_string(count));
  }
  if (!(momentum >= 0 && momentum <= 1)) throw std::invalid_argument("BnFinalizeStats: momentum must be in [0, 1]");
  if ((running_mean == nullptr) != (running_var == nullptr)) {
    throw std::invalid_argument("BnFinalizeStats: give both running_mean and running_var, or neither");
  }
  LaunchElementwise(channels,
                    internal::Finalize<T, M>{mean, m2, static_cast<T>(count), static_cast<T>(eps), static_cast<T>(momentum),
                                invstd, running_mean, running_var},
                    stream);
}

template <typename T>
void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd, cudaStream_t stream) {
  RequireNonNegative(channels, "BnInvstdFromVar: channels");
  CheckEps(eps, "BnInvstdFromVar");
  LaunchElementwise(channels, internal::InvstdFromVar<T>{var, static_cast<T>(eps), invstd}, stream);
}

template <typename T>
void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma, const T* beta, T* y,
                 cudaStream_t stream) {
  CheckShape(shape, "BnNormalize");
  LaunchChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                  internal::Normalize<T, M>{x, mean, invstd, gamma, beta, y, ChannelDivider(shape), PlaneDivider(shape),
                                            AllAligned({x, y})},
                  stream);
}

template <typename T>
void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, T* sum_dy,
                     T* sum_dy_xhat, cudaStream_t stream) {
  CheckShape(shape, "BnLocalGradSums");
  ReduceSegments<SumPairAcc<T, M>>(shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
                                   internal::ChannelGradPush<T, M>{dy, x, mean, shape.c, PlaneDivider(shape), AllAligned({dy, x})},
                                   internal::WriteCentredSums<T, M>{sum_dy, sum_dy_xhat, invstd, T(1)}, stream);
}

template <typename T>
void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                 const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx, cudaStream_t stream) {
  CheckShape(shape, "BnInputGrad");
  if (count <= 0) throw std::invalid_argument("BnInputGrad: count must be > 0, got " + std::to_string(count));
  LaunchChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                  internal::InputGrad<T, M>{dy, x, mean, invstd, gamma, sum_dy, sum_dy_xhat, static_cast<T>(count), dx,
                                            ChannelDivider(shape), PlaneDivider(shape), AllAligned({dy, x, dx})},
                  stream);
}

template <typename T>
void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta, T* y,
               T* mean, T* invstd, cudaStream_t stream) {
  CheckGroups(shape, groups, "GnForward");
  CheckEps(eps, "GnForward");
  const int64_t len = shape.c / groups * shape.plane;
  if (len == 0) return;
  ReduceSegments<WelfordAcc<T, M>>(
      shape.n * groups, len, GroupPlan<T>(shape, groups), internal::GroupWelfordPush<T, M>{x, len, AllAligned({x})},
      internal::WriteGroupStats<T, M>{mean, invstd, static_cast<T>(len), static_cast<T>(eps)}, stream);
  LaunchChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                  internal::GroupNormalize<T, M>{x, mean, invstd, gamma, beta, y, ChannelDivider(shape),
                                                 PlaneDivider(shape), IndexDivider::For(len, shape.Size()),
                                                 AllAligned({x, y})},
                  stream);
}

template <typename T>
void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean, const T* invstd,
                const T* gamma, T* dx, T* dgamma, T* dbeta, cudaStream_t stream) {
  CheckGroups(shape, groups, "GnBackward");
  const int64_t cpg = shape.c / groups;
  const int64_t len = cpg * shape.plane;
  // dgamma / dbeta over (n, plane) per channel; zeros for an empty batch.
  ReduceSegments<SumPairAcc<T, M>>(
      shape.c, shape.n * shape.plane, ChannelPlan<T>(shape),
      internal::GroupParamGradPush<T, M>{dy, x, mean, invstd, shape.c, groups, cpg, PlaneDivider(shape), AllAligned({dy, x})},
      internal::WriteSumPair<T, M>{dbeta, dgamma}, stream);
  const int64_t segments = shape.n * groups;
  if (segments == 0 || len == 0) return;
  internal::StreamScratch<T> means(static_cast<std::size_t>(segments) * 2, stream);
  T* mean_d = means.get();
  T* mean_d_xhat = means.get() + segments;
  ReduceSegments<SumPairAcc<T, M>>(
      segments, len, GroupPlan<T>(shape, groups),
      internal::GroupGradPush<T, M>{dy, x, mean, gamma, groups, cpg, PlaneDivider(shape), len, AllAligned({dy, x})},
      internal::WriteCentredSums<T, M>{mean_d, mean_d_xhat, invstd, T(1) / static_cast<T>(len)}, stream);
  LaunchChunks<T>(shape.Size(), ElementChunkWidth<T>(shape),
                  internal::GroupInputGrad<T, M>{dy, x, mean, invstd, gamma, mean_d, mean_d_xhat, dx,
                                                 ChannelDivider(shape), PlaneDivider(shape),
                                                 IndexDivider::For(len, shape.Size()), AllAligned({dy, x, dx})},
                  stream);
  means.Release();
}

#define DDP_INSTANTIATE_NORM(T)                                                                                  \
  template void BnLocalStats<T>(const T*, NchwShape, T*, T*, cudaStream_t);                                     \
  template int64_t BnMergeStats<T>(std::span<const int64_t>, const T*, const T*, int64_t, T*, T*, cudaStream_t); \
  template void BnFinalizeStats<T>(const T*, const T*, int64_t, int64_t, double, double, T*, T*, T*,            \
                                   cudaStream_t);                                                               \
  template void BnInvstdFromVar<T>(const T*, int64_t, double, T*, cudaStream_t);                                \
  template void BnNormalize<T>(const T*, NchwShape, const T*, const T*, const T*, const T*, T*, cudaStream_t);  \
  template void BnLocalGradSums<T>(const T*, const T*, NchwShape, const T*, const T*, T*, T*, cudaStream_t);     \
  template void BnInputGrad<T>(const T*, const T*, NchwShape, const T*, const T*, const T*, const T*, const T*, \
                               int64_t, T*, cudaStream_t);                                                      \
  template void GnForward<T>(const T*, NchwShape, int64_t, double, const T*, const T*, T*, T*, T*,              \
                             cudaStream_t);                                                                     \
  template void GnBackward<T>(const T*, const T*, NchwShape, int64_t, const T*, const T*, const T*, T*, T*, T*, \
                              cudaStream_t);

DDP_INSTANTIATE_NORM(float)
DDP_INSTANTIATE_NORM(double)

}  // namespace ddp::cuda
