// The evaluation scenario of the mean-of-means bug (seed 004), shared by
// repro/mean_of_means and fixes/mean_of_means.
//
// A binary classifier is evaluated on N validation samples split over W
// ranks. Each sample contributes a correctness bit (score > 0 predicts class
// 1) and a loss (BCE with the score as logit). The classifier is the
// Bayes-optimal score of the Gaussian task, so no training is involved: the
// bug lives entirely in how the per-rank numbers are combined.
//
// How the samples reach the ranks (the "sharding") decides whether ranks
// hold different counts, which is the condition for the bias:
//   padded_sampler   DistributedSampler(drop_last=false): ceil(N/W) indices
//                    per rank, the last few repeating the first (padding)
//   strided          indices r, r+W, r+2W, ... without padding (what a
//                    hand-written sharding or an IterableDataset split does)
//   filtered         padded sampler, then a data-dependent filter drops the
//                    samples whose first feature exceeds a threshold (as a
//                    collate_fn that skips unusable samples would)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::mean_of_means {

enum class Sharding { kPaddedSampler, kStrided, kFiltered };
const char* Name(Sharding s);
std::vector<Sharding> AllShardings();

struct Config {
  int64_t n = 1003;
  int world_size = 4;
  int batch_size = 32;
  Sharding sharding = Sharding::kPaddedSampler;
  uint64_t seed = 0;
};

// One sample as the metric sees it.
struct Outcome {
  int64_t index = 0;       // sample index in the dataset
  double correct = 0;      // 1 when the prediction is right
  double loss = 0;         // BCE-with-logits of the score
  bool padding = false;    // a DistributedSampler repeat of an earlier sample
};

// The batches of one rank, in step order.
using RankBatches = std::vector<std::vector<Outcome>>;

// What rank `rank` evaluates under `config`: deterministic, so every rank
// (and the one-process reference) can compute any rank's share.
RankBatches RankShare(const Config& config, int rank);

// The one-process reference: accuracy and mean loss over the N distinct
// samples (each counted once; filtered samples are excluded, since a single
// process applying the same filter would not see them either).
struct Global {
  double accuracy = 0;
  double loss = 0;
  int64_t count = 0;
};
Global Reference(const Config& config);

// True when every rank holds the same number of distinct, unfiltered
// samples in batches of the same sizes, and there is no padding: the
// condition under which averaging per-rank averages is exact.
bool EvenSplit(const Config& config);

}  // namespace ddp::mean_of_means
