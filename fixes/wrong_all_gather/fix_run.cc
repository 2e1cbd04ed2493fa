#include "fixes/wrong_all_gather/fix_run.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/device/copy_json.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "fixes/wrong_all_gather/gather.h"

namespace ddp::wrong_all_gather {
namespace {

using results::Json;

constexpr Sharding kShardings[] = {Sharding::kPaddedSampler, Sharding::kStrided};
constexpr Method kMethods[] = {Method::kPadGatherTrim, Method::kAllgatherv,
                               Method::kKnownCounts};

// One method on one sharding of a row, over its seeds, as rank 0 sees it.
struct MethodResult {
  double auc = 0;            // the first seed's
  double reference_auc = 0;  // the first seed's one-process value
  double max_abs_auc_error = 0;
  double max_abs_ap_error = 0;
  int disagreements = 0;  // seeds where defined-ness or the error message differ
  int undefined = 0;      // seeds where both agree the AUC is undefined
  int count_errors = 0;   // seeds where the gather did not return N predictions
  Json copies;            // on a device: this rank's copies in the first seed's gather (else null)
  Json staging;           // what the Comm staged in that gather (host buffers on NCCL)
};
DDP_JSON_FIELDS(MethodResult, auc, reference_auc, max_abs_auc_error, max_abs_ap_error,
                disagreements, undefined, count_errors, copies, staging)

std::vector<MethodResult> RunRows(comm::Comm& comm, const std::vector<Row>& rows, device::Placement placement) {
  const std::unique_ptr<device::Device<double>> dev = device::MakeDevice<double>(placement, "--gather_device");
  std::vector<MethodResult> out;
  for (const Row& row : rows) {
    for (Sharding s : kShardings) {
      for (Method m : kMethods) {
        MethodResult& v = out.emplace_back();
        for (int k = 0; k < row.seeds; ++k) {
          const Config c = row.At(s, k);
          const std::vector<int64_t> known = ShardCounts(c.n, c.world_size, s);
          const device::CopyCount before = dev ? dev->copies() : device::CopyCount{};
          const comm::Comm::StagedCopies staged_before = comm.staged_copies();
          const std::vector<Prediction> all =
              GatherPredictions(comm, Flatten(RankShare(c, comm.rank())), m, known, GatherOn{dev.get(), c.n});
          if (dev && k == 0) v.copies = device::ToJson(dev->copies() - before);
          if (k == 0) v.staging = device::StagingJson(staged_before, comm.staged_copies());
          if (static_cast<int64_t>(all.size()) != c.n) ++v.count_errors;
          const Metrics got = Compute(all);
          const Metrics ref = Reference(c);
          if (got.defined != ref.defined || got.error != ref.error) {
            ++v.disagreements;
            continue;
          }
          if (!got.defined) {
            ++v.undefined;
            continue;
          }
          if (k == 0) {
            v.auc = got.auc;
            v.reference_auc = ref.auc;
          }
          v.max_abs_auc_error = std::max(v.max_abs_auc_error, std::fabs(got.auc - ref.auc));
          v.max_abs_ap_error = std::max(v.max_abs_ap_error, std::fabs(got.ap - ref.ap));
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<results::Record> RunFixOnRows(const harness::CommonFlags& f, const std::vector<Row>& all_rows,
                                          device::Placement gather_device) {
  const device::Placement placement = device::Resolve(gather_device, f.backend, "--gather_device");
  std::vector<results::Record> records;
  for (int w : WorldSizes(all_rows)) {
    const std::vector<Row> rows = RowsOf(all_rows, w);
    std::fprintf(stderr, "wrong_all_gather fix: W=%d, %zu configurations x %d seeds...\n", w,
                 rows.size(), rows.empty() ? 0 : rows[0].seeds);
    const harness::WorldResult world =
        harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return Json(RunRows(comm, rows, placement)); });
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
          rec.config["gather_device"] = device::ToString(placement);
          if (harness::KeptAsError(world, rec, records)) {
            ++i;
            continue;
          }
          const MethodResult v = world.value[i++].get<MethodResult>();
          rec.reference["auc"] = v.reference_auc;
          rec.measured["auc"] = v.auc;
          rec.measured["error"] = v.max_abs_auc_error;
          rec.measured["max_abs_ap_error"] = v.max_abs_ap_error;
          rec.measured["undefined_seeds"] = v.undefined;
          rec.measured["disagreements"] = v.disagreements;
          rec.measured["count_errors"] = v.count_errors;
          rec.measured["collectives"] = m == Method::kKnownCounts ? 1 : 2;
          // Each rank's value of `key` for this record (null where a rank has none).
          const auto per_rank = [&](const char* key) {
            Json out = Json::array();
            for (const Json& rank : world.rank_values) out.push_back(rank.is_array() ? rank.at(i - 1).at(key) : Json());
            return out;
          };
          if (placement != device::Placement::kHost) rec.measured["device_copies"] = per_rank("copies");
          // The host int64 lengths exchange stays staged under NCCL (and the
          // whole host gather is); Gloo stages nothing, so its records keep
          // their fields.
          if (placement != device::Placement::kHost || f.backend == "nccl") {
            rec.measured["comm_staging"] = per_rank("staging");
          }
          const bool exact = v.max_abs_auc_error <= exact::kDoubleTolerance &&
                             v.max_abs_ap_error <= exact::kDoubleTolerance &&
                             v.disagreements == 0 && v.count_errors == 0;
          rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
          records.push_back(rec);
        }
      }
    }
  }
  return records;
}

std::vector<results::Record> RunFix(const harness::CommonFlags& f, bool sweep, device::Placement gather_device) {
  return RunFixOnRows(f, Rows(f, sweep), gather_device);
}

}  // namespace ddp::wrong_all_gather
