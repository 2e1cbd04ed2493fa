// Gathering evaluation predictions correctly: every rank's (index, score,
// label) to every rank, in global sample order, each sample once.
//
// Three ways to move ranks' different-length shares:
//   kPadGatherTrim  exchange lengths, pad every share to the longest, one
//                   equal-count all_gather, cut each share back to its length
//                   (torchmetrics' gather_all_tensors; costs W*max - sum
//                   wasted elements on the wire)
//   kAllgatherv     exchange lengths, one all_gather with per-rank counts
//   kKnownCounts    no exchange: every rank's length follows from the
//                   sharding (ShardCounts), so one all_gather with per-rank
//                   counts is the whole gather (one collective, like an
//                   equal-size gather; timed by bench/padding's known_counts)
// All three then sort by sample index and keep the first copy of each index, which
// drops the DistributedSampler's padding repeats (and makes the result
// independent of which rank held which sample).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/comm/comm.h"
#include "repro/wrong_all_gather/scenario.h"

namespace ddp::wrong_all_gather {

enum class Method { kPadGatherTrim, kAllgatherv, kKnownCounts };
const char* Name(Method m);

// How many predictions each rank holds under a sharding, known to every rank
// without communication: the padded DistributedSampler gives every rank
// ceil(N/W); the strided split gives rank r len(range(r, N, W)).
std::vector<int64_t> ShardCounts(int64_t n, int world_size, Sharding sharding);

// Collective on every rank. kPadGatherTrim and kAllgatherv make two
// collectives (lengths, then data) and ignore `known_counts`; kKnownCounts
// makes one and needs known_counts[r] = rank r's share length for every r.
// A rank whose own share does not have its known length throws
// std::invalid_argument before the collective (its peers then meet the
// collective's deadline instead of a wrong gather).
std::vector<Prediction> GatherPredictions(comm::Comm& comm, const std::vector<Prediction>& mine,
                                          Method method,
                                          std::span<const int64_t> known_counts = {});

}  // namespace ddp::wrong_all_gather
