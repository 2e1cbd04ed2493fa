#include "repro/autograd_lost_gather/pair_config.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device_flag.h"

namespace ddp::autograd_lost_gather {

using results::Json;

double Scale(const VariantSpec& v, int w) { return v.scale_by_world ? static_cast<double>(w) : 1.0; }

bool Runs(const VariantSpec& v, LossKind loss) {
  return std::find(v.losses.begin(), v.losses.end(), loss) != v.losses.end();
}

Json CountsJson(const std::vector<int64_t>& counts) {
  Json a = Json::array();
  for (int64_t c : counts) a.push_back(static_cast<long long>(c));
  return a;
}

std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairFlags& p) {
  return p.sweep ? p.sweep_worlds : std::vector<int>{f.world_size};
}

const char* Name(Layout layout) {
  switch (layout) {
    case Layout::kEven: return "even";
    case Layout::kUneven: return "uneven";
    case Layout::kEmptyRank: return "empty_rank";
  }
  return "?";
}

std::vector<int64_t> Counts(Layout layout, int world_size, int batch_size) {
  switch (layout) {
    case Layout::kEven: return EvenCounts(world_size, batch_size);
    case Layout::kUneven: return UnevenCounts(world_size, batch_size);
    case Layout::kEmptyRank: {
      std::vector<int64_t> counts = EvenCounts(world_size, batch_size);
      counts.back() = 0;
      return counts;
    }
  }
  return {};
}

bool LayoutRuns(Layout layout, int world_size, int batch_size) {
  const std::vector<int64_t> counts = Counts(layout, world_size, batch_size);
  if (Total(counts) < 2) return false;
  if (layout == Layout::kUneven) return counts != EvenCounts(world_size, batch_size);
  if (layout == Layout::kEmptyRank) return world_size >= 2;
  return true;
}

std::vector<GridCell> GridOf(const std::vector<int>& worlds, const std::vector<int>& batches) {
  std::vector<GridCell> grid;
  for (int w : worlds) {
    for (int b : batches) grid.push_back({w, b});
  }
  return grid;
}

std::vector<int64_t> EvenCounts(int world_size, int batch_size) {
  return std::vector<int64_t>(static_cast<std::size_t>(world_size), batch_size);
}

std::vector<int64_t> UnevenCounts(int world_size, int batch_size) {
  std::vector<int64_t> counts;
  for (int r = 0; r < world_size; ++r) {
    counts.push_back(1 + static_cast<int64_t>(batch_size) * r / world_size);
  }
  return counts;
}

void AddPairFlags(cli::Flags& flags, PairFlags* p, const char* sweep_help) {
  flags.Bool("sweep", &p->sweep, sweep_help);
  flags.Int("steps", &p->steps, "training steps per variant (0: gradient checks only)", 0, 100000);
  flags.Double("lr", &p->lr, "SGD learning rate (momentum 0.9)", 1e-6, 10);
}

std::string ValidatePair(const harness::CommonFlags& f, const PairFlags&) {
  if (f.world_size < 2) {
    return "--world_size must be at least 2 (allowed: 2..64): with one rank every gather is exact";
  }
  if (f.batch_size < 2) {
    return "--batch_size must be at least 2 (allowed: 2..1000000), so the uneven layout is uneven";
  }
  if (f.n < 2) return "--n (held-out rows) must be at least 2 (allowed: 2..100000000)";
  return "";
}

}  // namespace ddp::autograd_lost_gather
