// fixes/mean_of_means: all-reduce (sum, count), not averages.
//
// Each rank sums its per-sample correctness and loss over the samples it
// really owns (the DistributedSampler's padding repeats are recognised by
// their global position, j * W + rank >= N, and left out) and counts them;
// one allreduce of the three numbers gives every rank the global sums, and
// sum / count is the one-process value. The same rows as the repro, so the
// two tables line up.
#include <cmath>
#include <cstdio>
#include <vector>

#include "fixes/mean_of_means/fix_run.h"
#include "core/device/copy_json.h"
#include "core/device/device_allreduce.h"
#include "core/device/device_flag.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "core/harness/pair_main.h"
#include "repro/mean_of_means/scenario.h"
#include "repro/mean_of_means/sweep.h"

namespace ddp::mean_of_means {
namespace {

using results::Json;

// The fix itself: three numbers, one collective (on `dev`'s memory when
// given: uploaded, reduced there, downloaded).
Global SumCount(comm::Comm& comm, const RankBatches& mine, device::Device<double>* dev) {
  std::vector<double> v = {0, 0, 0};  // sum correct, sum loss, count
  for (const auto& batch : mine) {
    for (const Outcome& o : batch) {
      if (o.padding) continue;
      v[0] += o.correct;
      v[1] += o.loss;
      v[2] += 1;
    }
  }
  device::AllreduceOnDevice(comm, dev, std::span<double>(v), device::CopyKind::kStatistic);
  Global g;
  g.count = static_cast<int64_t>(v[2]);
  g.accuracy = v[2] > 0 ? v[0] / v[2] : 0;
  g.loss = v[2] > 0 ? v[1] / v[2] : 0;
  return g;
}

// One row of sum_count over its seeds, as rank 0 sees it.
struct SumCountResult {
  double accuracy = 0;            // the first seed's
  double reference_accuracy = 0;  // the first seed's one-process value
  double max_abs_error = 0;       // accuracy
  double max_loss_abs_error = 0;
  int64_t count_mismatch = 0;     // summed |count - N| over seeds
  Json device_copies;             // the first seed's (copy_json.h); null on the host
};
DDP_JSON_FIELDS(SumCountResult, accuracy, reference_accuracy, max_abs_error, max_loss_abs_error,
                count_mismatch, device_copies)

std::vector<SumCountResult> RunRows(comm::Comm& comm, const std::vector<Row>& rows, const std::string& device) {
  const auto dev = device::MakeDevice<double>(device::ResolveDeviceFlag(device, comm.backend()), device::kDeviceFlag);
  std::vector<SumCountResult> out;
  for (const Row& row : rows) {
    SumCountResult& v = out.emplace_back();
    for (int k = 0; k < row.seeds; ++k) {
      Config c = row.config;
      c.seed = row.first_seed + static_cast<std::uint64_t>(k);
      const int64_t before = comm.next_seq();
      const device::CopyCount copies = dev ? dev->copies() : device::CopyCount{};
      const Global got = SumCount(comm, RankShare(c, comm.rank()), dev.get());
      if (dev && k == 0) v.device_copies = device::ToJson(dev->copies() - copies);
      if (comm.next_seq() - before != 1) throw std::logic_error("sum_count must be one collective");
      const Global ref = Reference(c);
      if (k == 0) {
        v.accuracy = got.accuracy;
        v.reference_accuracy = ref.accuracy;
      }
      v.max_abs_error = std::max(v.max_abs_error, std::fabs(got.accuracy - ref.accuracy));
      v.max_loss_abs_error = std::max(v.max_loss_abs_error, std::fabs(got.loss - ref.loss));
      v.count_mismatch += std::abs(got.count - ref.count);
    }
  }
  return out;
}

}  // namespace

namespace {

// One world of `w` ranks runs `mine`; one sum_count record per row.
void AppendWorld(const harness::CommonFlags& f, int w, const std::vector<Row>& mine, const std::string& device,
                 std::vector<results::Record>& records) {
  std::fprintf(stderr, "mean_of_means fix: W=%d, %zu configurations x %d seeds...\n", w,
               mine.size(), f.seeds);
  const harness::WorldResult world =
      harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return Json(RunRows(comm, mine, device)); });
  for (std::size_t i = 0; i < mine.size(); ++i) {
    results::Record rec;
    rec.bug = "mean_of_means";
    rec.kind = results::Kind::kFix;
    rec.variant = "sum_count";
    rec.backend = f.backend;
    rec.world_size = w;
    rec.config = ConfigJson(mine[i]);
    if (w == kLightningWorld) rec.config["source"] = "Lightning issues 21838/21859";
    rec.config["device"] = device::ToString(device::ResolveDeviceFlag(device, f.backend));
    if (harness::KeptAsError(world, rec, records)) continue;
    const SumCountResult v = world.value[i].get<SumCountResult>();
    rec.reference["accuracy"] = v.reference_accuracy;
    rec.measured["accuracy"] = v.accuracy;
    rec.measured["error"] = v.max_abs_error;
    rec.measured["max_loss_abs_error"] = v.max_loss_abs_error;
    rec.measured["count_mismatch"] = v.count_mismatch;
    rec.measured["collectives"] = 1;
    if (!v.device_copies.is_null()) rec.measured["device_copies"] = v.device_copies;
    const bool exact = v.max_abs_error <= exact::kDoubleTolerance &&
                       v.max_loss_abs_error <= exact::kDoubleTolerance && v.count_mismatch == 0;
    rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
    records.push_back(rec);
  }
}

}  // namespace

std::vector<results::Record> RunFix(const harness::CommonFlags& f, bool sweep, bool lightning,
                                    const std::string& device) {
  const std::vector<Row> rows = Rows(f, sweep);
  std::vector<results::Record> records;
  for (int w : WorldSizes(rows)) AppendWorld(f, w, RowsOf(rows, w), device, records);
  // The Lightning split (W = 16, N = 44; repro variant lightning_int_count):
  // the count travels as a float64 in the same allreduce, nothing floors.
  if (lightning && RunsLightningWorld(f)) AppendWorld(f, kLightningWorld, LightningRows(f), device, records);
  return records;
}

}  // namespace ddp::mean_of_means
