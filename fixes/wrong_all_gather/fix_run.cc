#include "fixes/wrong_all_gather/fix_run.h"

#include <cmath>
#include <cstdio>

#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "fixes/wrong_all_gather/gather.h"

namespace ddp::wrong_all_gather {
namespace {

using results::Json;

constexpr Sharding kShardings[] = {Sharding::kPaddedSampler, Sharding::kStrided};
constexpr Method kMethods[] = {Method::kPadGatherTrim, Method::kAllgatherv,
                               Method::kKnownCounts};

Json RunRows(comm::Comm& comm, const std::vector<Row>& rows) {
  Json out = Json::array();
  for (const Row& row : rows) {
    for (Sharding s : kShardings) {
      for (Method m : kMethods) {
        double max_auc = 0, max_ap = 0, first_auc = 0, first_ref = 0;
        int disagreements = 0, undefined = 0, count_errors = 0;
        for (int k = 0; k < row.seeds; ++k) {
          const Config c = row.At(s, k);
          const std::vector<int64_t> known = ShardCounts(c.n, c.world_size, s);
          const std::vector<Prediction> all =
              GatherPredictions(comm, Flatten(RankShare(c, comm.rank())), m, known);
          if (static_cast<int64_t>(all.size()) != c.n) ++count_errors;
          const Metrics got = Compute(all);
          const Metrics ref = Reference(c);
          if (got.defined != ref.defined || got.error != ref.error) {
            ++disagreements;
            continue;
          }
          if (!got.defined) {
            ++undefined;
            continue;
          }
          if (k == 0) {
            first_auc = got.auc;
            first_ref = ref.auc;
          }
          max_auc = std::max(max_auc, std::fabs(got.auc - ref.auc));
          max_ap = std::max(max_ap, std::fabs(got.ap - ref.ap));
        }
        Json v;
        v["auc"] = first_auc;
        v["reference_auc"] = first_ref;
        v["max_abs_auc_error"] = max_auc;
        v["max_abs_ap_error"] = max_ap;
        v["disagreements"] = disagreements;
        v["undefined"] = undefined;
        v["count_errors"] = count_errors;
        out.push_back(v);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<results::Record> RunFixOnRows(const harness::CommonFlags& f,
                                          const std::vector<Row>& all_rows) {
  std::vector<results::Record> records;
  for (int w : WorldSizes(all_rows)) {
    const std::vector<Row> rows = RowsOf(all_rows, w);
    std::fprintf(stderr, "wrong_all_gather fix: W=%d, %zu configurations x %d seeds...\n", w,
                 rows.size(), rows.empty() ? 0 : rows[0].seeds);
    const harness::WorldResult world =
        harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return RunRows(comm, rows); });
    std::size_t i = 0;
    for (const Row& row : rows) {
      for (Sharding s : kShardings) {
        for (Method m : kMethods) {
          results::Record rec;
          rec.bug = "wrong_all_gather";
          rec.kind = results::Kind::kFix;
          rec.variant = Name(m);
          rec.backend = f.backend;
          rec.world_size = w;
          rec.config = ConfigJson(row, s);
          if (harness::KeptAsError(world, rec, records)) {
            ++i;
            continue;
          }
          const Json& v = world.value[i++];
          rec.reference["auc"] = v.at("reference_auc").get<double>();
          rec.measured["auc"] = v.at("auc").get<double>();
          rec.measured["error"] = v.at("max_abs_auc_error").get<double>();
          rec.measured["max_abs_ap_error"] = v.at("max_abs_ap_error").get<double>();
          rec.measured["undefined_seeds"] = v.at("undefined").get<double>();
          rec.measured["disagreements"] = v.at("disagreements").get<double>();
          rec.measured["count_errors"] = v.at("count_errors").get<double>();
          rec.measured["collectives"] = m == Method::kKnownCounts ? 1 : 2;
          const bool exact = v.at("max_abs_auc_error").get<double>() <= exact::kDoubleTolerance &&
                             v.at("max_abs_ap_error").get<double>() <= exact::kDoubleTolerance &&
                             v.at("disagreements").get<double>() == 0 &&
                             v.at("count_errors").get<double>() == 0;
          rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
          records.push_back(rec);
        }
      }
    }
  }
  return records;
}

std::vector<results::Record> RunFix(const harness::CommonFlags& f, bool sweep) {
  return RunFixOnRows(f, Rows(f, sweep));
}

}  // namespace ddp::wrong_all_gather
