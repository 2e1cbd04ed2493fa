#include "core/data/shard.h"

#include "core/data/sampler.h"

namespace ddp::data {

RankShard ShardOf(int64_t n, int world_size, int rank, ShardKind kind, int64_t seed) {
  RankShard s;
  if (kind == ShardKind::kStrided) {
    for (int64_t i = rank; i < n; i += world_size) s.indices.push_back(i);
    s.padding.assign(s.indices.size(), false);
    return s;
  }
  DistributedSamplerOptions so;
  so.num_replicas = world_size;
  so.rank = rank;
  so.shuffle = true;
  so.seed = seed;
  s.indices = DistributedSampler(n, so).Indices();
  // Local position j is position j * W + rank of the padded global list;
  // positions >= N are the repeats.
  for (std::size_t j = 0; j < s.indices.size(); ++j) {
    s.padding.push_back(static_cast<int64_t>(j) * world_size + rank >= n);
  }
  return s;
}

}  // namespace ddp::data
