#include "fixes/drop_last_hang/fix_run.h"

#include <algorithm>
#include <cstdio>

#include "fixes/drop_last_hang/fixes.h"
#include "repro/drop_last_hang/scenario.h"

namespace ddp::drop_last_hang {
namespace {

using results::Json;

struct Row {
  Fix fix;
  Config config;
};

std::vector<Row> Rows(const harness::CommonFlags& f, bool sweep) {
  std::vector<int> worlds = sweep ? std::vector<int>{2, 4, 8} : std::vector<int>{f.world_size};
  std::vector<Row> rows;
  for (int w : worlds) {
    const Config uneven{.sharding = Sharding::kUnevenShards, .n = UnevenN(f.n, w, f.batch_size),
                        .world_size = w, .batch_size = f.batch_size,
                        .seed = static_cast<uint64_t>(f.seed), .drop_last = false};
    const Config filtered{.sharding = Sharding::kFilteredBatches, .n = f.n, .world_size = w,
                          .batch_size = 2, .seed = static_cast<uint64_t>(f.seed),
                          .drop_last = false};
    rows.push_back({Fix::kDropLast, uneven});
    for (Fix fix : {Fix::kEvenBatches, Fix::kJoin}) {
      rows.push_back({fix, uneven});
      rows.push_back({fix, filtered});
    }
  }
  return rows;
}

double MaxRelError(const std::vector<StepResult>& got, const std::vector<StepResult>& ref) {
  double num = 0, den = 0;
  for (std::size_t s = 0; s < std::min(got.size(), ref.size()); ++s) {
    num = std::max(num, (got[s].average - ref[s].average).cwiseAbs().maxCoeff());
    den = std::max(den, ref[s].average.cwiseAbs().maxCoeff());
  }
  return den > 0 ? num / den : num;
}

Json RankJson(comm::Comm& comm, const Row& row) {
  const std::vector<StepResult> got = TrainWithFix(comm, row.fix, row.config);
  Json j;
  j["collectives"] = static_cast<long long>(comm.next_seq());
  j["steps"] = static_cast<long long>(got.size());
  if (comm.rank() == 0) {
    const std::vector<StepResult> ref = SerialReference(row.fix, row.config);
    j["reference_steps"] = static_cast<long long>(ref.size());
    j["max_rel_error"] = MaxRelError(got, ref);
    int min_contrib = comm.world_size(), mismatched = 0;
    for (std::size_t s = 0; s < got.size(); ++s) {
      min_contrib = std::min(min_contrib, got[s].contributors);
      mismatched += s >= ref.size() || got[s].contributors != ref[s].contributors;
    }
    j["contributors_min"] = min_contrib;
    j["contributor_mismatches"] = mismatched;
  }
  return j;
}

}  // namespace

std::vector<results::Record> RunFix(const harness::CommonFlags& f, bool sweep) {
  std::vector<results::Record> records;
  for (const Row& row : Rows(f, sweep)) {
    const Config& c = row.config;
    std::fprintf(stderr, "drop_last_hang fix: %s on %s W=%d N=%lld B=%d...\n", Name(row.fix),
                 Name(c.sharding), c.world_size, static_cast<long long>(c.n), c.batch_size);
    results::Record rec;
    rec.bug = "drop_last_hang";
    rec.kind = results::Kind::kFix;
    rec.variant = Name(row.fix);
    rec.backend = f.backend;
    rec.world_size = c.world_size;
    rec.config["sharding"] = Name(c.sharding);
    rec.config["n"] = static_cast<long long>(c.n);
    rec.config["batch_size"] = c.batch_size;
    rec.config["seed"] = static_cast<long long>(c.seed);
    rec.config["checked"] = true;
    Json unfixed = Json::MakeArray();
    for (int64_t s : StepCounts(c)) unfixed.Push(static_cast<long long>(s));
    rec.reference["steps_without_fix"] = unfixed;
    harness::WorldOptions wo = f.World(c.world_size);
    wo.checked = true;  // a step-count mismatch would throw CheckError
    const harness::WorldResult world =
        harness::RunWorld(wo, [&](comm::Comm& comm) { return RankJson(comm, row); });
    if (!world.ok) {
      rec.verdict = results::Verdict::kError;
      rec.error = world.failure;
      records.push_back(rec);
      continue;
    }
    Json collectives = Json::MakeArray();
    bool equal = true;
    const double first = world.rank_values[0].Find("collectives")->AsDouble();
    for (const Json& v : world.rank_values) {
      collectives.Push(v.Find("collectives")->AsDouble());
      equal &= v.Find("collectives")->AsDouble() == first;
    }
    const Json& v = world.value;
    rec.reference["steps"] = v.Find("reference_steps")->AsDouble();
    rec.reference["tolerance"] = kGradTolerance;
    rec.measured["max_rel_grad_error"] = v.Find("max_rel_error")->AsDouble();
    rec.measured["steps"] = v.Find("steps")->AsDouble();
    rec.measured["collectives_per_rank"] = collectives;
    rec.measured["equal_collectives"] = equal;
    rec.measured["contributors_min"] = v.Find("contributors_min")->AsDouble();
    rec.measured["contributor_mismatches"] = v.Find("contributor_mismatches")->AsDouble();
    const bool exact = equal && v.Find("max_rel_error")->AsDouble() <= kGradTolerance &&
                       v.Find("steps")->AsDouble() == v.Find("reference_steps")->AsDouble() &&
                       v.Find("contributor_mismatches")->AsDouble() == 0;
    rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
    records.push_back(rec);
  }
  return records;
}

}  // namespace ddp::drop_last_hang
