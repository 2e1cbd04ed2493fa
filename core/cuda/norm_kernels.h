// BatchNorm (incl. SyncBatchNorm's local parts) and GroupNorm on the GPU.
//
// Host API: device pointers plus a stream; every call enqueues work on the
// stream and returns (no synchronisation), and every CUDA status is checked
// (a CudaError names file:line and cudaGetErrorString). Bad arguments throw
// std::invalid_argument before any CUDA call. T is float or double.
//
// Layout and formulas are those of core/nn (tensor.h, batch_norm.h,
// group_norm.h), which is the reference the gpu tests compare against:
// x is contiguous NCHW, element (n, c, p) at (n * C + c) * plane + p with
// plane = H * W; xhat = (x - mean) * invstd; y = xhat * gamma + beta.
//
// SyncBatchNorm on the GPU, per rank:
//   BnLocalStats  -> (mean, M2) of the local batch, count = N * plane
//   [all-gather counts, means, M2s]  BnMergeStats -> global (mean, M2, count)
//   BnFinalizeStats (invstd, running stats)   BnNormalize -> y
//   backward: BnLocalGradSums -> (sum_dy, sum_dy_xhat)   [all-reduce sums]
//   BnInputGrad with the global sums and count -> dx
// dgamma / dbeta are the *local* sum_dy_xhat / sum_dy, as in core/nn.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "core/cuda/norm_bodies.h"  // NchwShape

namespace ddp::cuda {

// Per-channel mean and M2 (sum of squared deviations) over (N, plane):
// Welford per thread, Chan merges within and across blocks (reduce.h). An
// empty batch gives mean 0, M2 0 (count 0), like core/nn's ComputeChannelStats.
template <typename T>
void BnLocalStats(const T* x, NchwShape shape, T* mean, T* m2, cudaStream_t stream);

// Merges ranks' statistics in rank order (core/nn's MergeChannelStats):
// means and m2s are world x C row-major on the device, counts on the host
// (at most kMaxRanks). Ranks with count 0 contribute nothing. Returns the
// merged count.
inline constexpr int kMaxRanks = 256;
template <typename T>
int64_t BnMergeStats(std::span<const int64_t> counts, const T* means, const T* m2s, int64_t channels, T* mean,
                     T* m2, cudaStream_t stream);

// invstd = 1 / sqrt(M2 / count + eps); when running_mean / running_var are
// not null, also running = (1 - momentum) * running + momentum * batch with
// the unbiased variance M2 / (count - 1). count must be > 1 (PyTorch's
// "Expected more than 1 value per channel when training").
template <typename T>
void BnFinalizeStats(const T* mean, const T* m2, int64_t count, int64_t channels, double eps, double momentum,
                     T* invstd, T* running_mean, T* running_var, cudaStream_t stream);

// Eval mode: invstd = 1 / sqrt(var + eps) from the running variance.
template <typename T>
void BnInvstdFromVar(const T* var, int64_t channels, double eps, T* invstd, cudaStream_t stream);

// y = (x - mean[c]) * invstd[c] * gamma[c] + beta[c].
template <typename T>
void BnNormalize(const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma, const T* beta, T* y,
                 cudaStream_t stream);

// Local per-channel sum dy and sum dy * xhat (xhat from mean, invstd),
// computed as invstd * sum dy * (x - mean).
template <typename T>
void BnLocalGradSums(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, T* sum_dy,
                     T* sum_dy_xhat, cudaStream_t stream);

// dx = gamma * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M), with the
// global sums and the global count M (> 0).
template <typename T>
void BnInputGrad(const T* dy, const T* x, NchwShape shape, const T* mean, const T* invstd, const T* gamma,
                 const T* sum_dy, const T* sum_dy_xhat, int64_t count, T* dx, cudaStream_t stream);

// GroupNorm forward: per (sample, group) mean and invstd = 1/sqrt(var + eps)
// (biased variance over (C / G) * plane values, Welford + Chan), written as
// N x G arrays, and y = xhat * gamma[c] + beta[c]. groups must divide C.
template <typename T>
void GnForward(const T* x, NchwShape shape, int64_t groups, double eps, const T* gamma, const T* beta, T* y,
               T* mean, T* invstd, cudaStream_t stream);

// GroupNorm backward, given the forward's mean / invstd: dgamma[c] = sum
// dy * xhat, dbeta[c] = sum dy (over N and plane; written, not accumulated),
// and per group with dxhat = dy * gamma[c]:
// dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
template <typename T>
void GnBackward(const T* dy, const T* x, NchwShape shape, int64_t groups, const T* mean, const T* invstd,
                const T* gamma, T* dx, T* dgamma, T* dbeta, cudaStream_t stream);

}  // namespace ddp::cuda
