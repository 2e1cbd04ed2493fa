// The varlen kernels (varlen_kernels.h) on the host, for core/device's
// EmulatedDevice: the same results, the same errors. Every output value is a
// copy of an input value (or of `pad`), so "the same" means bit for bit; the
// only choice the kernels make is which copy of a repeated index survives
// (the first in gathered order: MarkFirst's atomicMin), made here the same
// way. Argument checks are the host wrappers' (same exception types).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddp::cuda::emulate {

inline constexpr int kVarlenMaxRanks = 256;  // varlen_kernels.h's limit, kept here without its CUDA header

template <typename T>
void PadRows(const T* src, int64_t rows, int64_t max_rows, int64_t width, T pad, T* dst) {
  if (rows < 0 || width < 0 || max_rows < rows) {
    throw std::invalid_argument("PadRows: rows " + std::to_string(rows) + ", max_rows " + std::to_string(max_rows) +
                                ", width " + std::to_string(width) + " (need 0 <= rows <= max_rows, width >= 0)");
  }
  const int64_t valid = rows * width;
  for (int64_t i = 0; i < max_rows * width; ++i) dst[i] = i < valid ? src[i] : pad;
}

template <typename T>
void TrimRows(const T* gathered, std::span<const int64_t> counts, int64_t max_rows, int64_t width, T* out) {
  if (max_rows < 0 || width < 0 || counts.empty() || counts.size() > static_cast<std::size_t>(kVarlenMaxRanks)) {
    throw std::invalid_argument("TrimRows: " + std::to_string(counts.size()) + " ranks (need 1 to " +
                                std::to_string(kVarlenMaxRanks) + "), max_rows " + std::to_string(max_rows) +
                                ", width " + std::to_string(width));
  }
  int64_t o = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0 || counts[r] > max_rows) {
      throw std::invalid_argument("TrimRows: count of rank " + std::to_string(r) + " is " +
                                  std::to_string(counts[r]) + ", outside [0, max_rows=" + std::to_string(max_rows) +
                                  "]");
    }
    const T* share = gathered + static_cast<int64_t>(r) * max_rows * width;
    for (int64_t e = 0; e < counts[r] * width; ++e) out[o++] = share[e];
  }
}

// The index is read byte-wise (memcpy): device memory is untyped, and a
// caller may keep int64 bit patterns in memory allocated for T.
template <typename T>
void ReorderByIndex(const int64_t* index, const T* rows, int64_t m, int64_t width, int64_t n_out, T* out) {
  if (m < 0 || width < 0 || n_out < 0) {
    throw std::invalid_argument("ReorderByIndex: m " + std::to_string(m) + ", width " + std::to_string(width) +
                                ", n_out " + std::to_string(n_out) + " (none may be negative)");
  }
  std::vector<int64_t> first(static_cast<std::size_t>(n_out), -1);
  uint64_t out_of_range = 0, missing = 0;
  for (int64_t i = 0; i < m; ++i) {
    int64_t k;
    std::memcpy(&k, index + i, sizeof k);
    if (k < 0 || k >= n_out) {
      ++out_of_range;
    } else if (first[k] < 0) {
      first[k] = i;
    }
  }
  for (int64_t k = 0; k < n_out; ++k) {
    if (first[k] < 0) {
      ++missing;
      continue;
    }
    for (int64_t j = 0; j < width; ++j) out[k * width + j] = rows[first[k] * width + j];
  }
  if (out_of_range != 0 || missing != 0) {
    throw std::runtime_error("ReorderByIndex: " + std::to_string(out_of_range) + " of " + std::to_string(m) +
                             " indices outside [0, " + std::to_string(n_out) + "), " + std::to_string(missing) +
                             " of [0, " + std::to_string(n_out) + ") never occurred");
  }
}

}  // namespace ddp::cuda::emulate
