// (tests) A varlen gather's device steps on one process, for varlen_test
// (emulated) and cuda_varlen_test (a GPU): every rank's share is uploaded
// and padded into its slot of one buffer, as an equal-count all_gather
// leaves them, then trimmed, its index column lifted out and reordered, and
// the result downloaded. Rows carry their index's 64 bits in the first
// 8 / sizeof(S) values, as fixes/wrong_all_gather's device gather packs them,
// then payload values chosen to catch any arithmetic on the way (NaN with a
// payload, -0, denormals, infinities). ReferenceVarlen is the contract in
// plain host code: the shares in rank order, a stable sort by index, the
// first row of each index kept.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/device/device.h"

namespace ddp::device::testing {

template <typename S>
using Bits = std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t>;

struct VarlenCase {
  std::string name;
  std::vector<std::vector<int64_t>> index;  // per rank, its rows' sample indices
  int64_t n_out = 0;                        // the indices cover [0, n_out)
  int64_t payload = 2;                      // values per row after the index
};

// Round-robin DistributedSampler shares (padding repeats from the front),
// unequal shares with an empty rank, and every rank holding one repeat.
inline std::vector<VarlenCase> VarlenCases() {
  std::vector<VarlenCase> cases;
  VarlenCase sampler{"sampler N=1003 W=4", std::vector<std::vector<int64_t>>(4), 1003, 2};
  for (int64_t i = 0; i < 1004; ++i) sampler.index[i % 4].push_back(i % 1003);
  cases.push_back(sampler);
  cases.push_back({"unequal with an empty rank", {{7, 2, 4}, {}, {0, 8, 1, 6, 5}, {3}}, 9, 3});
  cases.push_back({"N=1 W=3, all repeats", {{0}, {0}, {0}}, 1, 1});
  cases.push_back({"one rank", {{2, 0, 1}}, 3, 2});
  return cases;
}

template <typename S>
constexpr int64_t IndexSlots() {
  static_assert(sizeof(int64_t) % sizeof(S) == 0);
  return static_cast<int64_t>(sizeof(int64_t) / sizeof(S));
}

// Row `row` of rank `rank`: the index's bits, then payload values.
template <typename S>
std::vector<S> HostRow(const VarlenCase& c, int rank, std::size_t row) {
  const int64_t k = IndexSlots<S>();
  std::vector<S> out(static_cast<std::size_t>(k + c.payload));
  std::memcpy(out.data(), &c.index[rank][row], sizeof(int64_t));
  const S specials[] = {std::bit_cast<S>(static_cast<Bits<S>>(std::numeric_limits<Bits<S>>::max() >> 1)),  // NaN
                        S(-0.0), std::numeric_limits<S>::denorm_min(), -std::numeric_limits<S>::infinity()};
  for (int64_t j = 0; j < c.payload; ++j) {
    const int64_t v = c.index[rank][row] * 7 + rank * 3 + j;
    out[static_cast<std::size_t>(k + j)] = v % 5 == 0 ? specials[v % 4] : S(v) / S(3);
  }
  return out;
}

template <typename S>
std::vector<S> ReferenceVarlen(const VarlenCase& c) {
  struct Row {
    int64_t index;
    std::vector<S> values;
  };
  std::vector<Row> rows;
  for (int r = 0; r < static_cast<int>(c.index.size()); ++r) {
    for (std::size_t i = 0; i < c.index[r].size(); ++i) rows.push_back({c.index[r][i], HostRow<S>(c, r, i)});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
  std::vector<S> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].index == rows[i - 1].index) continue;
    out.insert(out.end(), rows[i].values.begin(), rows[i].values.end());
  }
  return out;
}

template <typename S>
struct VarlenResult {
  std::vector<S> out;
  int64_t uploads = 0;  // ranks with rows
};

template <typename S>
VarlenResult<S> RunVarlen(Device<S>& dev, const VarlenCase& c) {
  const int64_t k = IndexSlots<S>(), width = k + c.payload, world = static_cast<int64_t>(c.index.size());
  std::vector<int64_t> counts;
  for (const auto& share : c.index) counts.push_back(static_cast<int64_t>(share.size()));
  const int64_t max_rows = *std::max_element(counts.begin(), counts.end());
  int64_t m = 0;
  for (int64_t n : counts) m += n;
  DeviceArray<S> share(&dev), gathered(&dev), trimmed(&dev), index(&dev), out(&dev);
  S* slots = gathered.Reserve(static_cast<std::size_t>(world * max_rows * width));
  VarlenResult<S> result;
  for (int r = 0; r < world; ++r) {
    std::vector<S> host;
    for (std::size_t i = 0; i < c.index[r].size(); ++i) {
      const std::vector<S> row = HostRow<S>(c, r, i);
      host.insert(host.end(), row.begin(), row.end());
    }
    S* d = share.Reserve(host.size());
    dev.Upload(d, host.data(), host.size(), CopyKind::kPrediction);
    result.uploads += host.empty() ? 0 : 1;
    dev.PadRows(d, counts[r], max_rows, width, S(0), slots + r * max_rows * width);
  }
  S* t = trimmed.Reserve(static_cast<std::size_t>(m * width));
  dev.TrimRows(slots, counts, max_rows, width, t);
  S* idx = index.Reserve(static_cast<std::size_t>(m * k));
  dev.CopyRows(idx, static_cast<std::size_t>(k), t, static_cast<std::size_t>(width), static_cast<std::size_t>(k),
               static_cast<std::size_t>(m));
  S* o = out.Reserve(static_cast<std::size_t>(c.n_out * width));
  dev.ReorderByIndex(reinterpret_cast<const int64_t*>(idx), t, m, width, c.n_out, o);
  result.out.resize(static_cast<std::size_t>(c.n_out * width));
  dev.Download(result.out.data(), o, result.out.size(), CopyKind::kPrediction);
  return result;
}

}  // namespace ddp::device::testing
