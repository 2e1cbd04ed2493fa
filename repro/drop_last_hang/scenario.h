// The data pipelines of the drop_last hang (seed 001), shared by
// repro/drop_last_hang and fixes/drop_last_hang.
//
// Seed 001 blames drop_last=False. With PyTorch's DistributedSampler that
// alone pads every rank to ceil(N/W) indices, so every rank runs the same
// number of steps. What really gives ranks different step counts:
//   sampler_padding   DistributedSampler(drop_last=False) + DataLoader
//                     (drop_last=False): equal steps (the control)
//   uneven_shards     a hand-written split without padding (rank r takes
//                     r, r+W, ...; a contiguous split gives the same counts):
//                     when N % W != 0 and the remainder starts a new batch,
//                     the first N % W ranks run one more step
//   filtered_batches  DistributedSampler, then a data-dependent per-sample
//                     filter (a collate_fn dropping unusable samples) and a
//                     loop that skips batches the filter emptied: how many
//                     batches survive depends on each rank's data
// Everything here is a pure function of the config: every rank (and the
// one-process reference) can compute any rank's batches.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/data/synthetic.h"
#include "core/exact/replica.h"

namespace ddp::drop_last_hang {

enum class Sharding { kSamplerPadding, kUnevenShards, kFilteredBatches };
const char* Name(Sharding s);

struct Config {
  Sharding sharding = Sharding::kSamplerPadding;
  int64_t n = 1003;
  int world_size = 4;
  int batch_size = 32;
  uint64_t seed = 0;
  // Fixes (a): drop_last=True in the sampler and the loader.
  bool drop_last = false;
};

// A sample is "unusable" (filtered out) when its first feature exceeds
// this: about 20% of the Gaussian task's samples.
inline constexpr double kFilterThreshold = 1.0;

std::shared_ptr<const data::GaussianBinary> MakeDataset(const Config& c);

// The model every rank trains: the MLP with GroupNorm. A naive split's
// extra step always has a batch of exactly one sample (counts differ by at
// most one), and filtering leaves single-sample batches too; local
// BatchNorm would refuse those (as PyTorch's does) and crash the rank
// instead of leaving it stuck, which is a different failure.
replica::ReplicaOptions ModelOptions(const data::Dataset& dataset, const Config& c);

// The index lists rank `rank` trains on, in step order.
using Batches = std::vector<std::vector<int64_t>>;
Batches RankBatches(const Config& c, int rank);

// Steps per rank (index = rank).
std::vector<int64_t> StepCounts(const Config& c);

// The smallest N' >= n with N' % (W * B) == 1: a naive split gives rank 0
// one sample more than a whole number of batches, so it runs one step more
// than every other rank.
int64_t UnevenN(int64_t n, int world_size, int batch_size);

}  // namespace ddp::drop_last_hang
