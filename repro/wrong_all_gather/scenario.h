// The distributed-evaluation scenario of the wrong all_gather bug (seed
// 000), shared by repro/wrong_all_gather and fixes/wrong_all_gather.
//
// A binary classifier scores N validation samples split over W ranks; each
// rank collects (sample index, probability, label) batch by batch, and the
// global ROC AUC and average precision must be computed over all N samples.
// The classifier is the Bayes-optimal score of the Gaussian task passed
// through a sigmoid (one-process AUC about 0.86, the seed's number); no
// training is involved, since the bug is in the gathering.
//
// Sharding decides what each rank holds:
//   padded_sampler  DistributedSampler(shuffle, drop_last=false): every rank
//                   holds ceil(N/W) indices, the last few repeating the
//                   first ones (padding) when W does not divide N
//   strided         indices r, r+W, ... without padding: ranks hold
//                   floor(N/W) or ceil(N/W), so equal-count all_gathers of
//                   per-rank tensors have different lengths
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/data/shard.h"
#include "core/results/json.h"

namespace ddp::wrong_all_gather {

// The two splits of core/data/shard.h, under this pair's name.
using Sharding = data::ShardKind;
const char* Name(Sharding s);

struct Config {
  int64_t n = 1003;
  int world_size = 4;
  int batch_size = 32;
  Sharding sharding = Sharding::kPaddedSampler;
  uint64_t seed = 0;
};

struct Prediction {
  int64_t index = 0;
  double score = 0;  // sigmoid of the Bayes-optimal score
  int label = 0;
  bool padding = false;  // a DistributedSampler repeat
};

using Batches = std::vector<std::vector<Prediction>>;

// What rank `rank` predicts, batch by batch (deterministic: any rank can
// compute any other rank's share, and so can the one-process reference).
Batches RankShare(const Config& config, int rank);
std::vector<Prediction> Flatten(const Batches& batches);

// AUC and AP as sklearn computes them; `defined` is false (with sklearn's
// message) when they are not, e.g. for one class only.
struct Metrics {
  bool defined = false;
  double auc = 0;
  double ap = 0;
  std::string error;
};
// Its JSON form: in rank results, and as raw_unequal's record reference.
DDP_JSON_FIELDS(Metrics, defined, auc, ap, error)

Metrics Compute(std::span<const double> scores, std::span<const int> labels);
Metrics Compute(const std::vector<Prediction>& predictions);

// The one-process value: all N samples once, in index order.
Metrics Reference(const Config& config);

}  // namespace ddp::wrong_all_gather
