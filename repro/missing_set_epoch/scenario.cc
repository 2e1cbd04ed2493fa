#include "repro/missing_set_epoch/scenario.h"

#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include "core/data/sampler.h"
#include "core/data/torch_randperm.h"

namespace ddp::missing_set_epoch {

const char* Name(Mode m) {
  switch (m) {
    case Mode::kNoSetEpoch: return "no_set_epoch";
    case Mode::kPerRankSeed: return "per_rank_seed";
    case Mode::kSetEpoch: return "set_epoch";
  }
  return "?";
}

std::vector<int64_t> RankIndices(Mode mode, const OrderConfig& c, int rank, int epoch) {
  data::DistributedSamplerOptions o;
  o.num_replicas = c.world_size;
  o.rank = rank;
  o.shuffle = true;
  o.drop_last = false;
  o.seed = mode == Mode::kPerRankSeed ? c.seed + rank : c.seed;
  data::DistributedSampler sampler(c.n, o);
  // The bug is the missing call: the sampler stays at its initial epoch 0.
  if (mode != Mode::kNoSetEpoch) sampler.SetEpoch(epoch);
  return sampler.Indices();
}

std::vector<int64_t> Interleave(const std::vector<int64_t>& gathered, int w) {
  if (w <= 0 || gathered.size() % static_cast<std::size_t>(w) != 0) {
    throw std::invalid_argument("Interleave: " + std::to_string(gathered.size()) +
                                " indices do not split over " + std::to_string(w) + " ranks");
  }
  const std::size_t k = gathered.size() / static_cast<std::size_t>(w);
  std::vector<int64_t> out(gathered.size());
  for (std::size_t r = 0; r < static_cast<std::size_t>(w); ++r) {
    for (std::size_t j = 0; j < k; ++j) out[j * w + r] = gathered[r * k + j];
  }
  return out;
}

EpochCoverage Coverage(const std::vector<int64_t>& list, int64_t n) {
  std::unordered_set<int64_t> seen(list.begin(), list.end());
  EpochCoverage c;
  c.distinct = static_cast<int64_t>(seen.size());
  c.duplicates = static_cast<int64_t>(list.size()) - c.distinct;
  c.missed = n - c.distinct;
  c.coverage = n > 0 ? static_cast<double>(c.distinct) / static_cast<double>(n) : 1.0;
  return c;
}

double IdenticalFraction(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("IdenticalFraction: lengths differ");
  if (a.empty()) return 1.0;
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

int64_t Padding(int64_t n, int w) { return (n + w - 1) / w * w - n; }

std::vector<int64_t> OneProcessOrder(const OrderConfig& c, int epoch) {
  std::vector<int64_t> order = data::TorchRandperm(c.n, c.seed + epoch);
  const int64_t total = order.size() + Padding(c.n, c.world_size);
  // Padding repeats from the start (several times over when N < W).
  for (std::size_t i = 0; static_cast<int64_t>(order.size()) < total; ++i) order.push_back(order[i]);
  return order;
}

double ExpectedPerRankCoverage(int64_t n, int w) {
  const double k = static_cast<double>((n + w - 1) / w);
  return 1.0 - std::pow(1.0 - k / static_cast<double>(n), w);
}

double AsymptoticPerRankCoverage(int w) { return 1.0 - std::pow(1.0 - 1.0 / w, w); }

double CoverageSigma(int64_t n, int w) {
  const double p = ExpectedPerRankCoverage(n, w);
  return std::sqrt(p * (1 - p) / static_cast<double>(n));
}

}  // namespace ddp::missing_set_epoch
