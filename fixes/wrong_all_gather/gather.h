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
//
// On a device (GatherOn.device: core/device's CudaDevice under --backend
// nccl, or its emulation) the same steps run on device buffers: a rank's
// (index, score, label) rows are uploaded once, padded (PadRows), gathered
// by the Comm on device memory, trimmed (TrimRows), reordered with the
// padding repeats dropped (ReorderByIndex: the first copy of each index in
// gathered order, which is what the host's stable sort + unique keeps), and
// the result is downloaded once. The lengths exchange stays a host int64
// collective (TrimRows takes the counts on the host).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "repro/wrong_all_gather/scenario.h"

namespace ddp::wrong_all_gather {

enum class Method { kPadGatherTrim, kAllgatherv, kKnownCounts };
const char* Name(Method m);

// How many predictions each rank holds under a sharding, known to every rank
// without communication: the padded DistributedSampler gives every rank
// ceil(N/W); the strided split gives rank r len(range(r, N, W)).
std::vector<int64_t> ShardCounts(int64_t n, int world_size, Sharding sharding);

// Where the pad / trim / reorder run.
struct GatherOn {
  device::Device<double>* device = nullptr;  // nullptr: the host, as before the device path
  // Device only: the predictions' indices cover [0, samples) exactly (the
  // dataset's length; every rank passes the same). ReorderByIndex needs it;
  // a gather that loses or invents a sample throws std::runtime_error
  // there, where the host path returns the wrong count.
  int64_t samples = 0;
};

// Collective on every rank. kPadGatherTrim and kAllgatherv make two
// collectives (lengths, then data) and ignore `known_counts`; kKnownCounts
// makes one and needs known_counts[r] = rank r's share length for every r.
// A rank whose own share does not have its known length throws
// std::invalid_argument before the collective (its peers then meet the
// collective's deadline instead of a wrong gather).
std::vector<Prediction> GatherPredictions(comm::Comm& comm, const std::vector<Prediction>& mine,
                                          Method method,
                                          std::span<const int64_t> known_counts = {},
                                          const GatherOn& on = {});

}  // namespace ddp::wrong_all_gather
