// The rows bench/norm_kernels times and the bytes each must move: host-only
// arithmetic, so it is tested everywhere (traffic_test) and the GPU run only
// divides it by a time.
//
// A row is one call of core/cuda/norm_kernels.h (or a training step made of
// several). Each kernel is a sequence of passes over memory (a reduction, an
// elementwise launch); a pass reads each array it reads once and writes each
// array it writes once (a read-modify-write array, such as the running
// statistics, counts both ways). A row's traffic is the sum over its passes:
// what its kernels must move between the SMs and memory as they are written,
// not the least any BatchNorm could move (a GroupNorm whose group fits on
// chip could read x once; these kernels read it in two passes). Not counted:
// the reductions' block partials (at most 64 blocks x segments x 2 or 3
// values, bench/norm_kernels/README.md says how small) and the scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::bench::norm_kernels {

// x is N x C x H x W, contiguous NCHW.
struct Shape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t plane() const { return h * w; }
  int64_t elements() const { return n * c * h * w; }
  bool operator==(const Shape&) const = default;
};

// GroupNorm's groups for C channels: bench/sync_bn's rule, min(32, max(1,
// C / 2)); a shape whose C it does not divide is refused (ParseShapes).
int64_t GroupsFor(int64_t c);

// "NxCxHxW,NxCxHxW,...": the shapes, or an error naming the bad item (no
// value below 1, N * H * W >= 2 as BatchNorm's training statistics need, C
// divisible by GroupsFor(C), at most 2^31 elements per tensor).
std::optional<std::vector<Shape>> ParseShapes(const std::string& text, std::string* error);
std::string ShapeName(const Shape& s);  // "N:32/C:64/HW:56x56"

enum class Row {
  kBnStats,        // BnLocalStats
  kBnFinalize,     // BnFinalizeStats, with running statistics
  kBnNormalize,    // BnNormalize
  kBnGradSums,     // BnLocalGradSums
  kBnInputGrad,    // BnInputGrad
  kGnForward,      // GnForward
  kGnBackward,     // GnBackward
  kBnFwdBwd,       // a BatchNorm training step: stats, finalize, normalize, grad sums, input grad
  kSyncBnFwdBwd,   // SyncBatchNorm's kernel sequence at W = 1: the same with BnMergeStats of one rank
  kGnFwdBwd,       // GnForward + GnBackward
};
inline constexpr Row kAllRows[] = {Row::kBnStats,   Row::kBnFinalize, Row::kBnNormalize, Row::kBnGradSums,
                                   Row::kBnInputGrad, Row::kGnForward, Row::kGnBackward, Row::kBnFwdBwd,
                                   Row::kSyncBnFwdBwd, Row::kGnFwdBwd};
const char* RowName(Row r);  // "bn_stats", ... (the JSON's and PyTorch's script's row names)
std::optional<Row> ParseRow(const std::string& name);

// One pass of a row: what it reads and writes, in elements of the dtype.
struct Pass {
  std::string kernel;  // "BnLocalStats", "GnBackward: input grad", ...
  int64_t read = 0, written = 0;
};
std::vector<Pass> Passes(Row r, const Shape& s);

struct Traffic {
  int64_t read = 0, written = 0;  // bytes, summed over the passes
  int64_t footprint = 0;          // bytes of the distinct arrays the row touches (what a cache would hold)
  int64_t bytes() const { return read + written; }
};
Traffic RowTraffic(Row r, const Shape& s, int64_t element_size);

}  // namespace ddp::bench::norm_kernels
