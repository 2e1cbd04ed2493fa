#include "repro/drop_last_hang/scenario.h"

#include "core/data/data_loader.h"
#include "core/data/sampler.h"

namespace ddp::drop_last_hang {

const char* Name(Sharding s) {
  switch (s) {
    case Sharding::kSamplerPadding: return "sampler_padding";
    case Sharding::kUnevenShards: return "uneven_shards";
    case Sharding::kFilteredBatches: return "filtered_batches";
  }
  return "?";
}

std::shared_ptr<const data::GaussianBinary> MakeDataset(const Config& c) {
  return std::make_shared<const data::GaussianBinary>(
      data::GaussianBinaryConfig{.size = c.n, .seed = c.seed});
}

replica::ReplicaOptions ModelOptions(const data::Dataset& dataset, const Config& c) {
  replica::ReplicaOptions o;
  o.in_features = dataset.FeatureDim();
  o.norm = replica::Norm::kGroupNorm;
  o.init_seed = c.seed;
  return o;
}

namespace {

// Rank r's share of a hand-written split: r, r + W, r + 2W, ...
class StridedShard final : public data::Sampler {
 public:
  StridedShard(int64_t n, int w, int r) : n_(n), w_(w), r_(r) {}
  int64_t Size() const override { return n_ > r_ ? (n_ - r_ + w_ - 1) / w_ : 0; }
  std::vector<int64_t> Indices() const override {
    std::vector<int64_t> v;
    for (int64_t i = r_; i < n_; i += w_) v.push_back(i);
    return v;
  }

 private:
  int64_t n_;
  int w_, r_;
};

}  // namespace

Batches RankBatches(const Config& c, int rank) {
  auto ds = MakeDataset(c);
  data::DataLoaderOptions lo;
  lo.batch_size = c.batch_size;
  lo.drop_last = c.drop_last;
  if (c.sharding == Sharding::kUnevenShards && !c.drop_last) {
    lo.sampler = std::make_shared<StridedShard>(c.n, c.world_size, rank);
  } else {
    data::DistributedSamplerOptions so;
    so.num_replicas = c.world_size;
    so.rank = rank;
    so.seed = static_cast<int64_t>(c.seed);
    so.drop_last = c.drop_last;
    lo.sampler = std::make_shared<data::DistributedSampler>(c.n, so);
  }
  if (c.sharding == Sharding::kFilteredBatches) {
    lo.keep_sample = [ds](int64_t i) { return ds->Get(i).x(0) <= kFilterThreshold; };
    lo.yield_empty_batches = false;  // `if batch is None: continue`
  }
  return data::DataLoader(ds, lo).EpochBatches();
}

std::vector<int64_t> StepCounts(const Config& c) {
  std::vector<int64_t> steps;
  for (int r = 0; r < c.world_size; ++r) {
    steps.push_back(static_cast<int64_t>(RankBatches(c, r).size()));
  }
  return steps;
}

int64_t UnevenN(int64_t n, int w, int b) {
  const int64_t period = static_cast<int64_t>(w) * b;
  const int64_t k = n <= 1 ? 0 : (n - 1 + period - 1) / period;
  return k * period + 1;
}

}  // namespace ddp::drop_last_hang
