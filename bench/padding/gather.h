// One variable-length gather method on one workload, its buffers allocated
// up front (outside any timed region), run as many times as asked.
//
// Every rank r contributes lengths[r] float64 values Value(r, i); every
// method leaves all ranks' values in rank order in one contiguous output
// (the floors: W blocks of FloorCount(lengths) values), so Output() can be
// checked against Expected() before anything is timed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bench/padding/memory.h"
#include "bench/padding/profiles.h"
#include "core/comm/comm.h"

namespace ddp::bench {

class Gather {
 public:
  virtual ~Gather() = default;
  // One gather: collective, every rank must call it. Complete on return.
  virtual void Run() = 0;
  // The gathered output on the host (after Run).
  virtual std::vector<double> Output() = 0;
};

// Rank r's i-th value: exact in a double, distinct for every (r, i).
inline double Value(int rank, std::int64_t i) {
  return static_cast<double>(rank) * 4294967296.0 + static_cast<double>(i);
}

// What Output() must equal for `m` on these lengths.
std::vector<double> Expected(Method m, std::span<const std::int64_t> lengths);

// Every method but the NCCL-only ones, through the Comm API (either
// backend); `memory` must be what the backend takes (host for Gloo, device
// or host for NCCL). What a method may know of the other ranks' lengths is
// its premise: pad_gather_trim and allgatherv learn them as users' code
// does, from the sizes exchange (the lengths here only size buffers);
// known_counts takes them as known (they follow from the sharding);
// bounded_pad knows only a bound (the longest) and reads each length from
// the gathered block. The *_direct methods make the same calls as their
// twins with the communicator's Gloo allgatherv set to the direct exchange
// for the call (Comm::set_gloo_allgatherv; on NCCL they would be their
// twins, so bench/padding runs them on Gloo only). Throws
// std::invalid_argument for an NCCL-only method.
std::unique_ptr<Gather> MakeCommGather(Method m, comm::Comm& comm, Memory& memory,
                                       std::vector<std::int64_t> lengths);

}  // namespace ddp::bench
