#include "repro/mean_of_means/scenario.h"

#include <cmath>
#include <memory>
#include <set>

#include "core/data/data_loader.h"
#include "core/data/shard.h"
#include "core/data/synthetic.h"

namespace ddp::mean_of_means {
namespace {

// The filter keeps about 85% of the samples: enough to make per-rank counts
// differ, not so many that ranks run out of data.
constexpr double kFilterThreshold = 1.0;

std::shared_ptr<const data::GaussianBinary> MakeDataset(const Config& c) {
  data::GaussianBinaryConfig dc;
  dc.size = c.n;
  dc.seed = c.seed;
  return std::make_shared<const data::GaussianBinary>(dc);
}

Outcome Score(const data::GaussianBinary& ds, int64_t index) {
  const data::Sample s = ds.Get(index);
  const double z = ds.OracleScore(s);
  Outcome o;
  o.index = index;
  o.correct = ((z > 0) == (s.label == 1)) ? 1.0 : 0.0;
  // BCE with logits, computed stably: max(z,0) - z*y + log(1 + exp(-|z|)).
  o.loss = std::max(z, 0.0) - z * s.label + std::log1p(std::exp(-std::fabs(z)));
  return o;
}

bool Kept(const data::GaussianBinary& ds, int64_t index) {
  return ds.Get(index).x(0) <= kFilterThreshold;
}

}  // namespace

const char* Name(Sharding s) {
  switch (s) {
    case Sharding::kPaddedSampler: return "padded_sampler";
    case Sharding::kStrided: return "strided";
    case Sharding::kFiltered: return "filtered";
  }
  return "?";
}

std::vector<Sharding> AllShardings() {
  return {Sharding::kPaddedSampler, Sharding::kStrided, Sharding::kFiltered};
}

RankBatches RankShare(const Config& c, int rank) {
  auto ds = MakeDataset(c);
  // kFiltered filters the padded sampler's share.
  const data::ShardKind kind =
      c.sharding == Sharding::kStrided ? data::ShardKind::kStrided : data::ShardKind::kPaddedSampler;
  const data::RankShard share = data::ShardOf(c.n, c.world_size, rank, kind, static_cast<int64_t>(c.seed));
  const std::vector<int64_t>& indices = share.indices;
  RankBatches batches;
  for (std::size_t start = 0; start < indices.size(); start += c.batch_size) {
    std::vector<Outcome> batch;
    for (std::size_t j = start; j < std::min(indices.size(), start + c.batch_size); ++j) {
      if (c.sharding == Sharding::kFiltered && !Kept(*ds, indices[j])) continue;
      Outcome o = Score(*ds, indices[j]);
      o.padding = share.padding[j];
      batch.push_back(o);
    }
    // A batch the filter emptied is skipped, as a collate_fn returning
    // nothing would be by a loop that `continue`s on empty batches.
    if (!batch.empty()) batches.push_back(std::move(batch));
  }
  return batches;
}

Global Reference(const Config& c) {
  auto ds = MakeDataset(c);
  Global g;
  double correct = 0, loss = 0;
  for (int64_t i = 0; i < c.n; ++i) {
    if (c.sharding == Sharding::kFiltered && !Kept(*ds, i)) continue;
    const Outcome o = Score(*ds, i);
    correct += o.correct;
    loss += o.loss;
    ++g.count;
  }
  g.accuracy = g.count > 0 ? correct / g.count : 0;
  g.loss = g.count > 0 ? loss / g.count : 0;
  return g;
}

bool EvenSplit(const Config& c) {
  std::set<std::vector<std::size_t>> shapes;
  for (int r = 0; r < c.world_size; ++r) {
    std::vector<std::size_t> sizes;
    for (const auto& b : RankShare(c, r)) {
      for (const Outcome& o : b) {
        if (o.padding) return false;
      }
      sizes.push_back(b.size());
    }
    shapes.insert(sizes);
  }
  return shapes.size() == 1;
}

}  // namespace ddp::mean_of_means
