// repro/mean_of_means, variant lightning_int_count: pytorch-lightning's
// `self.log(name, v, on_epoch=True, sync_dist=True)` (issues 21838 / 21859).
//
// Lightning's _ResultMetric keeps, per rank, value = sum over batches of
// (batch mean x batch size) as a float and cumulated_batch_size as an int64
// tensor, and mean-syncs both. On gloo the mean is an all_reduce SUM and then
// `result.copy_(result / world_size)`: for the integer count the quotient is
// truncated on the way back into the int64 tensor (NCCL's AVG on integers
// divides in integers: the same floor). The epoch value is therefore
//     (sum_r value_r / W) / floor(sum_r count_r / W)
// = true mean x (N / W) / floor(N / W): 1.375 at W = 16, N = 44.
// Here both sums go through the engine (a float64 and an int64 allreduce),
// the integer division is C++'s, and the result is checked against that
// closed form and against the one-process mean.
#include "repro/mean_of_means/lightning.h"

#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device_allreduce.h"
#include "core/device/device_flag.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "repro/mean_of_means/scenario.h"
#include "repro/mean_of_means/sweep.h"

namespace ddp::mean_of_means {
namespace {

using results::Json;

struct Synced {
  double accuracy = 0;
  double loss = 0;
  int64_t count = 0;  // the floored mean of the per-rank counts
};

// What every rank's Lightning computes at the end of the epoch.
Synced LightningMean(comm::Comm& comm, const RankBatches& mine, device::Device<double>* dev) {
  std::vector<double> value = {0, 0};  // sum of (batch mean x batch size)
  std::vector<int64_t> count = {0};
  for (const auto& batch : mine) {
    double acc = 0, loss = 0;
    for (const Outcome& o : batch) {
      acc += o.correct;
      loss += o.loss;
    }
    const double n = static_cast<double>(batch.size());
    value[0] += acc / n * n;
    value[1] += loss / n * n;
    count[0] += static_cast<int64_t>(batch.size());
  }
  device::AllreduceOnDevice(comm, dev, std::span<double>(value), device::CopyKind::kStatistic);
  comm.Allreduce(std::span<int64_t>(count));  // an integer: no Device type, stays a host buffer
  const int w = comm.world_size();
  Synced s;
  s.count = count[0] / w;  // copy_(result / W) into an int64 tensor: truncates
  s.accuracy = (value[0] / w) / static_cast<double>(s.count);
  s.loss = (value[1] / w) / static_cast<double>(s.count);
  return s;
}

// One row of lightning_int_count over its seeds, as rank 0 sees it.
struct LightningResult {
  double accuracy = 0;            // the first seed's synced accuracy
  double reference_accuracy = 0;  // the first seed's one-process value
  double ratio = 0;               // accuracy / reference, first seed
  double loss_ratio = 0;          // the same for the loss
  int64_t synced_count = 0;       // the floored mean of the counts, first seed
  double closed_form_gap = 0;     // worst |ratio - closed form| over seeds, accuracy and loss
  Json device_copies;             // the first seed's (copy_json.h); null on the host
};
DDP_JSON_FIELDS(LightningResult, accuracy, reference_accuracy, ratio, loss_ratio, synced_count,
                closed_form_gap, device_copies)

std::vector<LightningResult> RunRows(comm::Comm& comm, const std::vector<Row>& rows, const std::string& device) {
  const auto dev = device::MakeDevice<double>(device::ResolveDeviceFlag(device, comm.backend()), device::kDeviceFlag);
  std::vector<LightningResult> out;
  for (const Row& row : rows) {
    LightningResult& v = out.emplace_back();
    for (int k = 0; k < row.seeds; ++k) {
      Config c = row.config;
      c.seed = row.first_seed + static_cast<std::uint64_t>(k);
      const device::CopyCount copies = dev ? dev->copies() : device::CopyCount{};
      const Synced got = LightningMean(comm, RankShare(c, comm.rank()), dev.get());
      if (dev && k == 0) v.device_copies = device::ToJson(dev->copies() - copies);
      const Global ref = Reference(c);
      const double closed = (static_cast<double>(c.n) / c.world_size) /
                            static_cast<double>(c.n / c.world_size);
      const double r = got.accuracy / ref.accuracy;
      v.closed_form_gap = std::max({v.closed_form_gap, std::fabs(r - closed),
                                    std::fabs(got.loss / ref.loss - closed)});
      if (k == 0) {
        v.ratio = r;
        v.loss_ratio = got.loss / ref.loss;
        v.accuracy = got.accuracy;
        v.reference_accuracy = ref.accuracy;
        v.synced_count = got.count;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<results::Record> RunLightning(const harness::CommonFlags& f, const std::string& device) {
  if (!RunsLightningWorld(f)) return {};
  const std::vector<Row> rows = LightningRows(f);
  const int w = kLightningWorld;
  const unsigned cpus = std::thread::hardware_concurrency();
  std::fprintf(stderr, "mean_of_means: Lightning's integer count, W=%d (%u CPUs%s)...\n", w, cpus,
               w > static_cast<int>(cpus) ? ", oversubscribed: values only" : "");
  const harness::WorldResult world =
      harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return Json(RunRows(comm, rows, device)); });
  std::vector<results::Record> records;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Config& c = rows[i].config;
    results::Record rec;
    rec.bug = "mean_of_means";
    rec.kind = results::Kind::kRepro;
    rec.variant = "lightning_int_count";
    rec.backend = f.backend;
    rec.world_size = w;
    rec.config = ConfigJson(rows[i]);
    rec.config["source"] = "Lightning issues 21838/21859";
    rec.config["oversubscribed"] = w > static_cast<int>(cpus);
    rec.config["device"] = device::ToString(device::ResolveDeviceFlag(device, f.backend));
    const bool even = c.n % c.world_size == 0;
    rec.control = even;
    if (harness::KeptAsError(world, rec, records)) continue;
    const LightningResult v = world.value[i].get<LightningResult>();
    const double closed = (static_cast<double>(c.n) / w) / static_cast<double>(c.n / w);
    rec.reference["accuracy"] = v.reference_accuracy;
    rec.reference["inflation_closed_form"] = closed;
    rec.measured["accuracy"] = v.accuracy;
    rec.measured["error"] = v.accuracy - v.reference_accuracy;
    rec.measured["inflation"] = v.ratio;
    rec.measured["loss_inflation"] = v.loss_ratio;
    rec.measured["synced_count"] = v.synced_count;
    rec.measured["closed_form_gap"] = v.closed_form_gap;
    if (!v.device_copies.is_null()) rec.measured["device_copies"] = v.device_copies;
    if (even) {
      rec.verdict = std::fabs(v.ratio - 1) <= exact::kDoubleTolerance
                        ? results::Verdict::kControl
                        : results::Verdict::kControlFailed;
    } else {
      rec.verdict = (v.ratio - 1 > 1e-9 && v.closed_form_gap <= exact::kDoubleTolerance)
                        ? results::Verdict::kReproduced
                        : results::Verdict::kNotReproduced;
    }
    records.push_back(rec);
  }
  return records;
}

}  // namespace ddp::mean_of_means
