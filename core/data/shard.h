// Which of N samples one rank of W evaluates, and which of them are padding:
// the two splits the evaluation pairs (repro/mean_of_means,
// repro/wrong_all_gather) give their ranks, in one place so both split alike.
//
//   kPaddedSampler  DistributedSampler(shuffle, seed, drop_last=false): every
//                   rank holds ceil(N/W) indices; when W does not divide N
//                   the last few repeat the first ones (the padding)
//   kStrided        indices r, r+W, r+2W, ... without padding (a hand-written
//                   split, or an IterableDataset's): ranks hold floor(N/W) or
//                   ceil(N/W)
#pragma once

#include <cstdint>
#include <vector>

namespace ddp::data {

enum class ShardKind { kPaddedSampler, kStrided };

struct RankShard {
  std::vector<int64_t> indices;  // sample indices, in the order the rank sees them
  std::vector<bool> padding;     // padding[j]: indices[j] is a sampler repeat
};

// Rank `rank`'s share of samples 0..n-1 under `kind` (seed: the sampler's
// shuffle seed; kStrided ignores it). Deterministic, so any rank, and a
// one-process reference, can compute any rank's share.
RankShard ShardOf(int64_t n, int world_size, int rank, ShardKind kind, int64_t seed);

}  // namespace ddp::data
