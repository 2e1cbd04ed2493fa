#include "fixes/wrong_all_gather/gather.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/data/sampler.h"

namespace ddp::wrong_all_gather {
namespace {

// One buffer of (index, score, label) triples, so a share moves in one
// collective and predictions cannot part from their labels. Indices and
// labels are exact in a double (indices below 2^53).
constexpr std::size_t kFields = 3;

std::vector<double> Pack(const std::vector<Prediction>& ps) {
  std::vector<double> out;
  out.reserve(ps.size() * kFields);
  for (const Prediction& p : ps) {
    out.push_back(static_cast<double>(p.index));
    out.push_back(p.score);
    out.push_back(p.label);
  }
  return out;
}

void Unpack(const double* data, std::size_t count, std::vector<Prediction>& out) {
  for (std::size_t i = 0; i < count; ++i) {
    Prediction p;
    p.index = static_cast<int64_t>(data[i * kFields]);
    p.score = data[i * kFields + 1];
    p.label = static_cast<int>(data[i * kFields + 2]);
    out.push_back(p);
  }
}

}  // namespace

const char* Name(Method m) {
  switch (m) {
    case Method::kPadGatherTrim: return "pad_gather_trim";
    case Method::kAllgatherv: return "allgatherv";
    case Method::kKnownCounts: return "known_counts";
  }
  return "?";
}

std::vector<int64_t> ShardCounts(int64_t n, int world_size, Sharding sharding) {
  std::vector<int64_t> counts;
  for (int r = 0; r < world_size; ++r) {
    if (sharding == Sharding::kPaddedSampler) {
      data::DistributedSamplerOptions o;
      o.num_replicas = world_size;
      o.rank = r;
      counts.push_back(data::DistributedSampler(n, o).num_samples());
    } else {
      counts.push_back(r < n ? (n - r + world_size - 1) / world_size : 0);  // len(range(r, n, W))
    }
  }
  return counts;
}

std::vector<Prediction> GatherPredictions(comm::Comm& comm, const std::vector<Prediction>& mine,
                                          Method method, std::span<const int64_t> known_counts) {
  const int64_t n_local = static_cast<int64_t>(mine.size());
  std::vector<int64_t> counts;
  if (method == Method::kKnownCounts) {
    if (known_counts.size() != static_cast<std::size_t>(comm.world_size()) ||
        known_counts[static_cast<std::size_t>(comm.rank())] != n_local) {
      throw std::invalid_argument(
          "GatherPredictions(known_counts): rank " + std::to_string(comm.rank()) + " holds " +
          std::to_string(n_local) + " predictions, not the known count (" +
          std::to_string(known_counts.size()) + " counts for world size " +
          std::to_string(comm.world_size()) + ")");
    }
    counts.assign(known_counts.begin(), known_counts.end());
  } else {
    counts = comm.Allgather<int64_t>(std::span<const int64_t>(&n_local, 1));
  }
  std::vector<double> packed = Pack(mine);
  std::vector<Prediction> all;
  if (method == Method::kPadGatherTrim) {
    const std::size_t max_len =
        static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
    packed.resize(max_len * kFields, 0.0);
    const std::vector<double> gathered = comm.Allgather<double>(packed);
    for (int r = 0; r < comm.world_size(); ++r) {
      Unpack(gathered.data() + r * max_len * kFields, static_cast<std::size_t>(counts[r]), all);
    }
  } else {
    std::vector<std::size_t> elems;
    for (int64_t c : counts) elems.push_back(static_cast<std::size_t>(c) * kFields);
    const std::vector<double> gathered = comm.Allgatherv<double>(packed, elems);
    std::size_t total = 0;
    for (int64_t c : counts) total += static_cast<std::size_t>(c);
    Unpack(gathered.data(), total, all);
  }
  // Global order, each sample once: the padding repeats go.
  std::stable_sort(all.begin(), all.end(),
                   [](const Prediction& a, const Prediction& b) { return a.index < b.index; });
  all.erase(std::unique(all.begin(), all.end(),
                        [](const Prediction& a, const Prediction& b) { return a.index == b.index; }),
            all.end());
  return all;
}

}  // namespace ddp::wrong_all_gather
