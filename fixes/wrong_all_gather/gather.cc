#include "fixes/wrong_all_gather/gather.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "core/data/sampler.h"

namespace ddp::wrong_all_gather {
namespace {

// One buffer of (index, score, label) triples, so a share moves in one
// collective and predictions cannot part from their labels. Labels are
// exact in a double. The host keeps the index as a double's value (exact
// below 2^53); the device path keeps its 64 bits (std::bit_cast), because
// ReorderByIndex reads the index column as int64_t: every step on the way
// copies values and never computes on them, so the bits survive.
constexpr std::size_t kFields = 3;
enum class IndexAs { kValue, kBits };

std::vector<double> Pack(const std::vector<Prediction>& ps, IndexAs as) {
  std::vector<double> out;
  out.reserve(ps.size() * kFields);
  for (const Prediction& p : ps) {
    out.push_back(as == IndexAs::kBits ? std::bit_cast<double>(p.index) : static_cast<double>(p.index));
    out.push_back(p.score);
    out.push_back(p.label);
  }
  return out;
}

void Unpack(const double* data, std::size_t count, std::vector<Prediction>& out, IndexAs as) {
  for (std::size_t i = 0; i < count; ++i) {
    Prediction p;
    p.index = as == IndexAs::kBits ? std::bit_cast<int64_t>(data[i * kFields])
                                   : static_cast<int64_t>(data[i * kFields]);
    p.score = data[i * kFields + 1];
    p.label = static_cast<int>(data[i * kFields + 2]);
    out.push_back(p);
  }
}

// The device path (gather.h): `counts` are every rank's share lengths. Copies
// (counted by the device, kind prediction): this rank's rows up (none when it
// has none), the `samples` gathered rows down; plus ReorderByIndex's 16-byte
// check (statistic).
std::vector<Prediction> GatherOnDevice(comm::Comm& comm, const std::vector<Prediction>& mine, Method method,
                                       const std::vector<int64_t>& counts, const GatherOn& on) {
  device::Device<double>& dev = *on.device;
  constexpr int64_t kWidth = static_cast<int64_t>(kFields);
  const int64_t n_local = static_cast<int64_t>(mine.size());
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  device::DeviceArray<double> local(&dev), padded(&dev), gathered(&dev), trimmed(&dev), index(&dev), out(&dev);
  const std::vector<double> packed = Pack(mine, IndexAs::kBits);
  double* share = local.Reserve(packed.size());
  dev.Upload(share, packed.data(), packed.size(), device::CopyKind::kPrediction);
  double* rows = nullptr;  // the `total` gathered rows in rank order
  if (method == Method::kPadGatherTrim) {
    const int64_t max_len = *std::max_element(counts.begin(), counts.end());
    double* mine_padded = padded.Reserve(static_cast<std::size_t>(max_len * kWidth));
    dev.PadRows(share, n_local, max_len, kWidth, 0.0, mine_padded);
    double* all = gathered.Reserve(static_cast<std::size_t>(comm.world_size() * max_len * kWidth));
    dev.Synchronize();  // the padded share is written before the engine reads it
    comm.Allgather(mine_padded, all, static_cast<std::size_t>(max_len * kWidth), comm::DTypeOf<double>());
    rows = trimmed.Reserve(static_cast<std::size_t>(total * kWidth));
    dev.TrimRows(all, counts, max_len, kWidth, rows);
  } else {
    std::vector<std::size_t> elems;
    for (int64_t c : counts) elems.push_back(static_cast<std::size_t>(c * kWidth));
    rows = gathered.Reserve(static_cast<std::size_t>(total * kWidth));
    dev.Synchronize();
    comm.Allgatherv(share, packed.size(), rows, elems, comm::DTypeOf<double>());
  }
  // The index column, contiguous, as the int64_t ReorderByIndex reads.
  double* idx = index.Reserve(static_cast<std::size_t>(total));
  dev.CopyRows(idx, 1, rows, kFields, 1, static_cast<std::size_t>(total));
  double* ordered = out.Reserve(static_cast<std::size_t>(on.samples * kWidth));
  dev.ReorderByIndex(reinterpret_cast<const int64_t*>(idx), rows, total, kWidth, on.samples, ordered);
  std::vector<double> host(static_cast<std::size_t>(on.samples * kWidth));
  dev.Download(host.data(), ordered, host.size(), device::CopyKind::kPrediction);
  std::vector<Prediction> all;
  all.reserve(static_cast<std::size_t>(on.samples));
  Unpack(host.data(), static_cast<std::size_t>(on.samples), all, IndexAs::kBits);
  return all;
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
                                          Method method, std::span<const int64_t> known_counts,
                                          const GatherOn& on) {
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
  if (on.device != nullptr) return GatherOnDevice(comm, mine, method, counts, on);
  std::vector<double> packed = Pack(mine, IndexAs::kValue);
  std::vector<Prediction> all;
  if (method == Method::kPadGatherTrim) {
    const std::size_t max_len =
        static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
    packed.resize(max_len * kFields, 0.0);
    const std::vector<double> gathered = comm.Allgather<double>(packed);
    for (int r = 0; r < comm.world_size(); ++r) {
      Unpack(gathered.data() + r * max_len * kFields, static_cast<std::size_t>(counts[r]), all, IndexAs::kValue);
    }
  } else {
    std::vector<std::size_t> elems;
    for (int64_t c : counts) elems.push_back(static_cast<std::size_t>(c) * kFields);
    const std::vector<double> gathered = comm.Allgatherv<double>(packed, elems);
    std::size_t total = 0;
    for (int64_t c : counts) total += static_cast<std::size_t>(c);
    Unpack(gathered.data(), total, all, IndexAs::kValue);
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
