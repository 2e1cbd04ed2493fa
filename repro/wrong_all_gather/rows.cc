#include "repro/wrong_all_gather/rows.h"

#include <algorithm>
#include <set>

namespace ddp::wrong_all_gather {
namespace {

template <typename T>
std::vector<T> Unique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

Config Row::At(Sharding s, int k) const {
  Config c;
  c.n = n;
  c.world_size = world_size;
  c.batch_size = batch_size;
  c.sharding = s;
  c.seed = first_seed + static_cast<uint64_t>(k);
  return c;
}

std::vector<Row> Rows(const harness::CommonFlags& f, bool sweep) {
  const std::vector<int> worlds = sweep ? std::vector<int>{2, 4, 8}
                                        : std::vector<int>{f.world_size};
  std::vector<Row> rows;
  for (int w : worlds) {
    const auto ns = Unique(sweep ? std::vector<int64_t>{f.n, 250LL * w, 97, 10}
                                 : std::vector<int64_t>{f.n, 250LL * w});
    const auto bs = Unique(sweep ? std::vector<int>{f.batch_size, 7, 1}
                                 : std::vector<int>{f.batch_size, 7});
    for (int64_t n : ns) {
      for (int b : bs) {
        Row r;
        r.n = n;
        r.world_size = w;
        r.batch_size = b;
        r.seeds = f.seeds;
        r.first_seed = static_cast<uint64_t>(f.seed);
        rows.push_back(r);
      }
    }
  }
  return rows;
}

std::vector<int> WorldSizes(const std::vector<Row>& rows) {
  std::set<int> ws;
  for (const Row& r : rows) ws.insert(r.world_size);
  return {ws.begin(), ws.end()};
}

std::vector<Row> RowsOf(const std::vector<Row>& rows, int world_size) {
  std::vector<Row> out;
  for (const Row& r : rows) {
    if (r.world_size == world_size) out.push_back(r);
  }
  return out;
}

results::Json ConfigJson(const Row& row, Sharding s) {
  results::Json j;
  j["sharding"] = Name(s);
  j["n"] = row.n;
  j["batch_size"] = row.batch_size;
  j["seeds"] = row.seeds;
  j["first_seed"] = static_cast<long long>(row.first_seed);
  return j;
}

}  // namespace ddp::wrong_all_gather
