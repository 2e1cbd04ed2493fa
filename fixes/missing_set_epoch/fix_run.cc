// fixes/missing_set_epoch: one shared seed and sampler.set_epoch(epoch) at
// the start of every epoch. Each epoch the ranks all-gather what they
// iterate; the global list must be the one-process order of that epoch.
#include "fixes/missing_set_epoch/fix_run.h"

#include <cstdio>

#include "repro/missing_set_epoch/orders.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairOptions& o) {
  std::vector<results::Record> records;
  const std::vector<int64_t> ns = DatasetSizes(f, o);
  for (int w : WorldSizes(f, o)) {
    std::fprintf(stderr, "missing_set_epoch fix: W=%d, %d seeds x %d epochs...\n", w, f.seeds,
                 o.epochs);
    const harness::WorldResult world = harness::RunWorld(f.World(w), [&](comm::Comm& comm) {
      results::Json rows = results::Json::MakeArray();
      for (int64_t n : ns) {
        const OrderConfig c{.n = n, .world_size = w, .seed = f.seed, .epochs = o.epochs};
        rows.Push(MeasureOrders(comm, Mode::kSetEpoch, c, f.seed, f.seeds).ToJson());
      }
      return rows;
    });
    for (std::size_t i = 0; i < ns.size(); ++i) {
      results::Record rec;
      rec.bug = "missing_set_epoch";
      rec.kind = results::Kind::kFix;
      rec.variant = "set_epoch";
      rec.backend = f.backend;
      rec.world_size = w;
      rec.config["n"] = static_cast<long long>(ns[i]);
      rec.config["epochs"] = o.epochs;
      rec.config["seeds"] = f.seeds;
      rec.config["first_seed"] = static_cast<long long>(f.seed);
      if (!world.ok) {
        rec.verdict = results::Verdict::kError;
        rec.error = world.failure;
        records.push_back(rec);
        continue;
      }
      const results::Json& s = world.value.AsArray()[i];
      auto get = [&](const char* k) { return s.Find(k)->AsDouble(); };
      const double padding = static_cast<double>(Padding(ns[i], w));
      rec.reference["coverage"] = 1.0;
      rec.reference["padding_duplicates"] = padding;
      rec.reference["max_identical_fraction"] = kMaxIdenticalFraction;
      rec.measured["coverage_min"] = get("coverage_min");
      rec.measured["duplicates_max"] = get("duplicates_max");
      rec.measured["duplicates_mean"] = get("duplicates_mean");
      rec.measured["identical_max"] = get("identical_max");
      rec.measured["matches_one_process"] = get("matches_one_process");
      rec.measured["epochs"] = get("epochs");
      rec.measured["same_as_epoch0"] = get("same_as_epoch0");
      const bool exact = get("matches_one_process") == get("epochs") &&
                         get("coverage_min") == 1.0 && get("duplicates_max") == padding &&
                         get("duplicates_mean") == padding &&
                         get("identical_max") <= kMaxIdenticalFraction &&
                         get("same_as_epoch0") == f.seeds;  // only each seed's epoch 0
      rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
      records.push_back(rec);
    }
  }
  return records;
}

}  // namespace ddp::missing_set_epoch
