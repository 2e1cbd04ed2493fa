// The sampling scenario of the missing set_epoch bug (seed 001), shared by
// repro/missing_set_epoch and fixes/missing_set_epoch.
//
// N samples, W ranks, E epochs, core/data's PyTorch-exact DistributedSampler
// (shuffle=True, drop_last=False). Three ways a training script drives it:
//   no_set_epoch   one shared seed, sampler.set_epoch() never called: the
//                  generator is seeded seed + 0 every epoch
//   per_rank_seed  what seed 001 says happens ("each rank shuffles
//                  differently"): rank r's sampler gets seed + r (set_epoch
//                  is called), so the ranks' shares are independent draws
//   set_epoch      the fix: one shared seed, set_epoch(epoch) every epoch
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::missing_set_epoch {

enum class Mode { kNoSetEpoch, kPerRankSeed, kSetEpoch };
const char* Name(Mode m);

struct OrderConfig {
  int64_t n = 1003;
  int world_size = 4;
  int64_t seed = 0;
  int epochs = 5;
};

// The indices rank `rank` iterates in epoch `epoch` (what
// `sampler.set_epoch(epoch)` or its omission leaves the sampler at).
std::vector<int64_t> RankIndices(Mode mode, const OrderConfig& c, int rank, int epoch);

// The global list of one epoch as the ranks see it together: rank r's
// j-th index at position j * W + r (the DistributedSampler's own layout
// before it subsamples).
std::vector<int64_t> Interleave(const std::vector<int64_t>& gathered_rank_major, int world_size);

// What one epoch's global list covers.
struct EpochCoverage {
  double coverage = 0;      // distinct indices / N
  int64_t distinct = 0;
  int64_t duplicates = 0;   // list length - distinct (extra copies)
  int64_t missed = 0;       // N - distinct
};
EpochCoverage Coverage(const std::vector<int64_t>& global_list, int64_t n);

// Fraction of positions p with a[p] == b[p] (a, b of equal length).
double IdenticalFraction(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// The one-process order of epoch `epoch` with a shared seed: torch.randperm(N)
// seeded seed + epoch, padded by repeating its start to ceil(N/W) * W — what
// every fixed run's interleaved global list must equal.
std::vector<int64_t> OneProcessOrder(const OrderConfig& c, int epoch);

// Padding repeats per epoch: ceil(N/W) * W - N.
int64_t Padding(int64_t n, int world_size);

// Per-rank independent shares (per_rank_seed): each rank holds
// k = ceil(N/W) distinct indices, a uniform random subset (for N >= W the
// padding never repeats an index within one rank), independent across
// ranks. So sample i is missed by all W ranks with probability (1 - k/N)^W:
//   E[coverage] = 1 - (1 - k/N)^W,
// which tends to 1 - (1 - 1/W)^W (75% for W = 2, 68.4% for W = 4) as N
// grows with N % W = 0. One epoch's coverage has standard deviation at most
// about sqrt(p (1 - p) / N) (p = E[coverage]; draws within a rank are
// negatively correlated, which only shrinks it).
double ExpectedPerRankCoverage(int64_t n, int world_size);
double AsymptoticPerRankCoverage(int world_size);
double CoverageSigma(int64_t n, int world_size);

}  // namespace ddp::missing_set_epoch
