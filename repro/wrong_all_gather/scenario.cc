#include "repro/wrong_all_gather/scenario.h"

#include <cmath>
#include <exception>

#include "core/data/synthetic.h"
#include "core/metrics/binary.h"

namespace ddp::wrong_all_gather {
namespace {

data::GaussianBinary MakeDataset(const Config& c) {
  data::GaussianBinaryConfig dc;
  dc.size = c.n;
  dc.seed = c.seed;
  return data::GaussianBinary(dc);
}

Prediction Predict(const data::GaussianBinary& ds, int64_t index) {
  const data::Sample s = ds.Get(index);
  Prediction p;
  p.index = index;
  p.score = 1.0 / (1.0 + std::exp(-ds.OracleScore(s)));
  p.label = s.label;
  return p;
}

}  // namespace

const char* Name(Sharding s) {
  return s == Sharding::kPaddedSampler ? "padded_sampler" : "strided";
}

Batches RankShare(const Config& c, int rank) {
  const data::GaussianBinary ds = MakeDataset(c);
  const data::RankShard share =
      data::ShardOf(c.n, c.world_size, rank, c.sharding, static_cast<int64_t>(c.seed));
  const std::vector<int64_t>& indices = share.indices;
  Batches batches;
  for (std::size_t start = 0; start < indices.size(); start += c.batch_size) {
    std::vector<Prediction> batch;
    for (std::size_t j = start; j < std::min(indices.size(), start + c.batch_size); ++j) {
      Prediction p = Predict(ds, indices[j]);
      p.padding = share.padding[j];
      batch.push_back(p);
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

std::vector<Prediction> Flatten(const Batches& batches) {
  std::vector<Prediction> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

Metrics Compute(std::span<const double> scores, std::span<const int> labels) {
  Metrics m;
  try {
    m.auc = metrics::RocAuc(scores, labels);
    m.ap = metrics::AveragePrecision(scores, labels);
    m.defined = true;
  } catch (const std::exception& e) {
    m.error = e.what();
  }
  return m;
}

Metrics Compute(const std::vector<Prediction>& predictions) {
  std::vector<double> scores;
  std::vector<int> labels;
  for (const Prediction& p : predictions) {
    scores.push_back(p.score);
    labels.push_back(p.label);
  }
  return Compute(scores, labels);
}

Metrics Reference(const Config& c) {
  const data::GaussianBinary ds = MakeDataset(c);
  std::vector<Prediction> all;
  for (int64_t i = 0; i < c.n; ++i) all.push_back(Predict(ds, i));
  return Compute(all);
}

}  // namespace ddp::wrong_all_gather
