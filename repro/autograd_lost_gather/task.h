// The data of the autograd_lost_gather scenario (shared by repro and fix).
//
// Sample k of a batch: label y (each batch holds floor(N/2) positives at
// random positions, so both classes are always present and the soft-AUC loss
// is defined for any N >= 2), base features x = (2y - 1) * separation/2 * u
// + e with u = (1, ..., 1)/sqrt(dim) and e of unit variance per coordinate,
// and two "augmented views" a = x + view_noise * e1, b = x + view_noise * e2
// (the positive pair of the contrastive loss). The noise is uniform on
// [-sqrt 3, sqrt 3] (unit variance) so that every value is bit-identical on
// any platform (core/nn/rng.h: Uniform is exact, Normal is not).
//
// A batch is a pure function of (seed, stream, N): every rank builds the same
// global batch and keeps its own rows, and so does the one-process reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "repro/autograd_lost_gather/encoder.h"

namespace ddp::autograd_lost_gather {

struct TaskOptions {
  int dim = 8;
  double separation = 2.0;
  double view_noise = 0.5;
};

struct Batch {
  Mat x;  // N x dim: base features (soft-AUC loss)
  Mat a;  // N x dim: view 1 (contrastive anchors)
  Mat b;  // N x dim: view 2 (contrastive keys; b[k] is a[k]'s positive)
  std::vector<int> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

Batch MakeBatch(uint64_t seed, uint64_t stream, int64_t n, const TaskOptions& options);

// Rows [begin, begin + count).
Batch Slice(const Batch& batch, int64_t begin, int64_t count);

// Per-rank row counts and where each rank's rows start in the gathered batch.
std::vector<int64_t> Offsets(std::span<const int64_t> counts);
int64_t Total(std::span<const int64_t> counts);

// Streams: training step t uses stream t; held-out data uses kHeldOutStream.
constexpr uint64_t kHeldOutStream = 1ULL << 40;
// Gradient checks use a stream of their own.
constexpr uint64_t kGradCheckStream = (1ULL << 40) + 1;

}  // namespace ddp::autograd_lost_gather
