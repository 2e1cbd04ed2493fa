#include "repro/mean_of_means/sweep.h"

#include <algorithm>
#include <set>

#include "core/harness/world.h"

namespace ddp::mean_of_means {

void AddRowFlags(cli::Flags& flags, RowFlags* rows) {
  flags.Bool("sweep", &rows->sweep, "W in {2,4,8}, N in {--n,1024,97}, batch in {--batch_size,7,1}");
  flags.Bool("no_lightning", &rows->no_lightning,
             "skip the W = 16 world of Lightning issues 21838/21859 (16 ranks: oversubscribed on\n"
             "small machines; what a test of the other rows does not need)");
}

std::vector<Row> Rows(const harness::CommonFlags& f, bool sweep) {
  std::vector<int> worlds = sweep ? std::vector<int>{2, 4, 8} : std::vector<int>{f.world_size};
  std::vector<Row> rows;
  for (int w : worlds) {
    std::vector<int64_t> ns = sweep ? std::vector<int64_t>{f.n, 1024, 97}
                                    : std::vector<int64_t>{f.n, 256LL * w};
    std::vector<int> batches = sweep ? std::vector<int>{f.batch_size, 7, 1}
                                     : std::vector<int>{f.batch_size, 7};
    std::sort(ns.begin(), ns.end());
    ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    for (Sharding s : AllShardings()) {
      for (int64_t n : ns) {
        for (int b : batches) {
          Row r;
          r.config.n = n;
          r.config.world_size = w;
          r.config.batch_size = b;
          r.config.sharding = s;
          r.seeds = f.seeds;
          r.first_seed = static_cast<std::uint64_t>(f.seed);
          rows.push_back(r);
        }
      }
    }
  }
  return rows;
}

std::vector<Row> LightningRows(const harness::CommonFlags& f) {
  std::vector<Row> rows;
  for (int64_t n : {44, 48}) {
    Row r;
    r.config.n = n;
    r.config.world_size = kLightningWorld;
    r.config.batch_size = 3;  // one batch per rank
    r.config.sharding = Sharding::kStrided;
    r.seeds = f.seeds;
    r.first_seed = static_cast<std::uint64_t>(f.seed);
    rows.push_back(r);
  }
  return rows;
}

bool RunsLightningWorld(const harness::CommonFlags& f) {
  if (f.backend != "gloo") return false;
  return !harness::LaunchedAsRank() || harness::LauncherWorldSize() == kLightningWorld;
}

std::vector<int> WorldSizes(const std::vector<Row>& rows) {
  std::set<int> ws;
  for (const Row& r : rows) ws.insert(r.config.world_size);
  return {ws.begin(), ws.end()};
}

std::vector<Row> RowsOf(const std::vector<Row>& rows, int world_size) {
  std::vector<Row> out;
  for (const Row& r : rows) {
    if (r.config.world_size == world_size) out.push_back(r);
  }
  return out;
}

results::Json ConfigJson(const Row& row) {
  results::Json j;
  j["sharding"] = Name(row.config.sharding);
  j["n"] = row.config.n;
  j["batch_size"] = row.config.batch_size;
  j["seeds"] = row.seeds;
  j["first_seed"] = static_cast<long long>(row.first_seed);
  return j;
}

}  // namespace ddp::mean_of_means
