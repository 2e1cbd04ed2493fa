#include "repro/missing_set_epoch/rows.h"

#include <algorithm>

namespace ddp::missing_set_epoch {

std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairOptions& o) {
  std::vector<int> w = {2, f.world_size};
  if (o.sweep) w.insert(w.end(), {4, 8});
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}

std::vector<int64_t> DatasetSizes(const harness::CommonFlags& f, const PairOptions& o) {
  std::vector<int64_t> n = {f.n};
  if (o.sweep && f.n != 10000) n.push_back(10000);
  return n;
}

}  // namespace ddp::missing_set_epoch
