// Gathering evaluation predictions correctly: every rank's (index, score,
// label) to every rank, in global sample order, each sample once.
//
// Two ways to move ranks' different-length shares:
//   kPadGatherTrim  exchange lengths, pad every share to the longest, one
//                   equal-count all_gather, cut each share back to its length
//                   (torchmetrics' gather_all_tensors; costs W*max - sum
//                   wasted elements on the wire)
//   kAllgatherv     exchange lengths, one all_gather with per-rank counts
// Both then sort by sample index and keep the first copy of each index, which
// drops the DistributedSampler's padding repeats (and makes the result
// independent of which rank held which sample).
#pragma once

#include <vector>

#include "core/comm/comm.h"
#include "repro/wrong_all_gather/scenario.h"

namespace ddp::wrong_all_gather {

enum class Method { kPadGatherTrim, kAllgatherv };
const char* Name(Method m);

// Two collectives either way (lengths, then data). Collective on every rank.
std::vector<Prediction> GatherPredictions(comm::Comm& comm, const std::vector<Prediction>& mine,
                                          Method method);

}  // namespace ddp::wrong_all_gather
