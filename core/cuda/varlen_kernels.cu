#include "core/cuda/varlen_kernels.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/cuda/check.h"
#include "core/cuda/launch.cuh"

namespace ddp::cuda {
namespace {

using internal::LaunchElementwise;
using internal::RequireNonNegative;
using internal::StreamScratch;

template <typename T>
struct Pad {
  const T* src;
  int64_t valid;  // rows * width
  T pad;
  T* dst;
  __device__ void operator()(int64_t i) const { dst[i] = i < valid ? src[i] : pad; }
};

// Row offsets of each rank's share in the output: offsets[r] = sum of counts
// before r; passed by value (a kernel parameter), so no host-device copy.
struct RankOffsets {
  int64_t v[kVarlenMaxRanks + 1];
};

template <typename T>
struct Trim {
  const T* gathered;
  RankOffsets offsets;
  int world;
  int64_t max_rows, width;
  T* out;
  __device__ void operator()(int64_t o) const {
    const int64_t row = o / width;
    int r = 0;
    while (r + 1 < world && offsets.v[r + 1] <= row) ++r;  // ranks are few; shares may be empty
    const int64_t src_row = r * max_rows + (row - offsets.v[r]);
    out[o] = gathered[src_row * width + (o - row * width)];
  }
};

using Position = unsigned long long;  // atomicMin's 64-bit type
constexpr Position kNone = ~Position{0};

struct MarkFirst {
  const int64_t* index;
  int64_t n_out;
  Position* first;
  Position* out_of_range;
  __device__ void operator()(int64_t i) const {
    const int64_t k = index[i];
    if (k < 0 || k >= n_out) {
      atomicAdd(out_of_range, Position{1});
    } else {
      atomicMin(first + k, static_cast<Position>(i));
    }
  }
};

template <typename T>
struct ScatterFirst {
  const int64_t* index;
  const T* rows;
  int64_t n_out, width;
  const Position* first;
  T* out;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / width;
    const int64_t k = index[i];
    if (k < 0 || k >= n_out || first[k] != static_cast<Position>(i)) return;
    out[k * width + (e - i * width)] = rows[e];
  }
};

struct CountMissing {
  const Position* first;
  Position* missing;
  __device__ void operator()(int64_t k) const {
    if (first[k] == kNone) atomicAdd(missing, Position{1});
  }
};

}  // namespace

template <typename T>
void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst, cudaStream_t stream) {
  RequireNonNegative(rows, "PadRows: rows");
  RequireNonNegative(width, "PadRows: width");
  if (max_rows < rows) {
    throw std::invalid_argument("PadRows: max_rows (" + std::to_string(max_rows) + ") < rows (" +
                                std::to_string(rows) + ")");
  }
  LaunchElementwise(max_rows * width, Pad<T>{src, rows * width, pad, dst}, stream);
}

template <typename T>
void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width, T* out,
              cudaStream_t stream) {
  RequireNonNegative(max_rows, "TrimRows: max_rows");
  RequireNonNegative(width, "TrimRows: width");
  if (counts.empty() || counts.size() > static_cast<std::size_t>(kVarlenMaxRanks)) {
    throw std::invalid_argument("TrimRows: need 1 to " + std::to_string(kVarlenMaxRanks) + " ranks, got " +
                                std::to_string(counts.size()));
  }
  RankOffsets offsets{};
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0 || counts[r] > max_rows) {
      throw std::invalid_argument("TrimRows: count of rank " + std::to_string(r) + " is " +
                                  std::to_string(counts[r]) + ", outside [0, max_rows=" + std::to_string(max_rows) +
                                  "]");
    }
    offsets.v[r + 1] = offsets.v[r] + counts[r];
  }
  const int world = static_cast<int>(counts.size());
  LaunchElementwise(offsets.v[world] * width, Trim<T>{gathered, offsets, world, max_rows, width, out}, stream);
}

template <typename T>
void ReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out, T* out,
                    cudaStream_t stream) {
  RequireNonNegative(m, "ReorderByIndex: m");
  RequireNonNegative(width, "ReorderByIndex: width");
  RequireNonNegative(n_out, "ReorderByIndex: n_out");
  // first[k]: smallest gathered position holding index k; then the two
  // error counters (out of range, missing).
  StreamScratch<Position> scratch(static_cast<std::size_t>(n_out) + 2, stream);
  Position* first = scratch.get();
  Position* counters = scratch.get() + n_out;
  DDP_CUDA_CHECK(cudaMemsetAsync(first, 0xFF, n_out * sizeof(Position), stream));  // kNone
  DDP_CUDA_CHECK(cudaMemsetAsync(counters, 0, 2 * sizeof(Position), stream));
  LaunchElementwise(m, MarkFirst{index, n_out, first, counters}, stream);
  LaunchElementwise(m * width, ScatterFirst<T>{index, rows, n_out, width, first, out}, stream);
  LaunchElementwise(n_out, CountMissing{first, counters + 1}, stream);
  Position host[2] = {0, 0};
  DDP_CUDA_CHECK(cudaMemcpyAsync(host, counters, sizeof host, cudaMemcpyDeviceToHost, stream));
  scratch.Release();
  DDP_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host[0] != 0 || host[1] != 0) {
    throw std::runtime_error("ReorderByIndex: " + std::to_string(host[0]) + " of " + std::to_string(m) +
                             " indices outside [0, " + std::to_string(n_out) + "), " + std::to_string(host[1]) +
                             " of [0, " + std::to_string(n_out) + ") never occurred");
  }
}

#define DDP_INSTANTIATE_VARLEN(T)                                                                     \
  template void PadRows<T>(const T*, int64_t, int64_t, int64_t, T, T*, cudaStream_t);                \
  template void TrimRows<T>(const T*, std::span<const int64_t>, int64_t, int64_t, T*, cudaStream_t); \
  template void ReorderByIndex<T>(const int64_t*, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);

DDP_INSTANTIATE_VARLEN(float)
DDP_INSTANTIATE_VARLEN(double)
DDP_INSTANTIATE_VARLEN(int64_t)

}  // namespace ddp::cuda
