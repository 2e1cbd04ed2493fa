// The device side of a variable-length all_gather (the pad / trim / reorder
// steps of fixes/wrong_all_gather/gather.cc, which does them on the host):
//
//   lengths exchange -> PadRows (each rank pads its share to the longest)
//   -> equal-count all_gather -> TrimRows (cut every share back, concatenate)
//   -> ReorderByIndex (global sample order, first copy of each index kept,
//      which drops the DistributedSampler's padding repeats)
//
// A share is `rows` rows of `width` values (row-major). Device pointers plus
// a stream; every CUDA status is checked; bad arguments throw
// std::invalid_argument before any CUDA call. T is float, double or int64_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

namespace ddp::cuda {

// dst (max_rows x width) = src's rows, then max_rows - rows rows of `pad`.
template <typename T>
void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst, cudaStream_t stream);

// gathered holds counts.size() shares of max_rows x width each; out receives
// the first counts[r] rows of every share r, in rank order (sum(counts) rows).
// At most kVarlenMaxRanks ranks; every count in [0, max_rows].
inline constexpr int kVarlenMaxRanks = 256;
template <typename T>
void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width, T* out,
              cudaStream_t stream);

// out (n_out x width): row k = the first row i (in gathered order) with
// index[i] == k. Equals a stable sort by index followed by dropping repeated
// indices, when the indices cover [0, n_out) exactly. Synchronises the stream
// to check that: throws std::runtime_error naming how many indices fell
// outside [0, n_out) and how many of [0, n_out) never occurred.
template <typename T>
void ReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out, T* out,
                    cudaStream_t stream);

}  // namespace ddp::cuda
