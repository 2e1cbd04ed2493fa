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
Synced LightningMean(comm::Comm& comm, const RankBatches& mine) {
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
  comm.Allreduce(std::span<double>(value));
  comm.Allreduce(std::span<int64_t>(count));
  const int w = comm.world_size();
  Synced s;
  s.count = count[0] / w;  // copy_(result / W) into an int64 tensor: truncates
  s.accuracy = (value[0] / w) / static_cast<double>(s.count);
  s.loss = (value[1] / w) / static_cast<double>(s.count);
  return s;
}

Json RunRows(comm::Comm& comm, const std::vector<Row>& rows) {
  Json out = Json::array();
  for (const Row& row : rows) {
    double worst_ratio_gap = 0, ratio = 0, accuracy = 0, ref_accuracy = 0, loss_ratio = 0;
    int64_t count = 0;
    for (int k = 0; k < row.seeds; ++k) {
      Config c = row.config;
      c.seed = row.first_seed + static_cast<std::uint64_t>(k);
      const Synced got = LightningMean(comm, RankShare(c, comm.rank()));
      const Global ref = Reference(c);
      const double closed = (static_cast<double>(c.n) / c.world_size) /
                            static_cast<double>(c.n / c.world_size);
      const double r = got.accuracy / ref.accuracy;
      worst_ratio_gap = std::max({worst_ratio_gap, std::fabs(r - closed),
                                  std::fabs(got.loss / ref.loss - closed)});
      if (k == 0) {
        ratio = r;
        loss_ratio = got.loss / ref.loss;
        accuracy = got.accuracy;
        ref_accuracy = ref.accuracy;
        count = got.count;
      }
    }
    Json v;
    v["accuracy"] = accuracy;
    v["reference_accuracy"] = ref_accuracy;
    v["ratio"] = ratio;
    v["loss_ratio"] = loss_ratio;
    v["synced_count"] = count;
    v["closed_form_gap"] = worst_ratio_gap;
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<results::Record> RunLightning(const harness::CommonFlags& f) {
  if (!RunsLightningWorld(f)) return {};
  const std::vector<Row> rows = LightningRows(f);
  const int w = kLightningWorld;
  const unsigned cpus = std::thread::hardware_concurrency();
  std::fprintf(stderr, "mean_of_means: Lightning's integer count, W=%d (%u CPUs%s)...\n", w, cpus,
               w > static_cast<int>(cpus) ? ", oversubscribed: values only" : "");
  const harness::WorldResult world =
      harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return RunRows(comm, rows); });
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
    const bool even = c.n % c.world_size == 0;
    rec.control = even;
    if (harness::KeptAsError(world, rec, records)) continue;
    const Json& v = world.value[i];
    const double closed = (static_cast<double>(c.n) / w) / static_cast<double>(c.n / w);
    rec.reference["accuracy"] = v.at("reference_accuracy").get<double>();
    rec.reference["inflation_closed_form"] = closed;
    rec.measured["accuracy"] = v.at("accuracy").get<double>();
    rec.measured["error"] = v.at("accuracy").get<double>() - v.at("reference_accuracy").get<double>();
    rec.measured["inflation"] = v.at("ratio").get<double>();
    rec.measured["loss_inflation"] = v.at("loss_ratio").get<double>();
    rec.measured["synced_count"] = v.at("synced_count").get<double>();
    rec.measured["closed_form_gap"] = v.at("closed_form_gap").get<double>();
    const double gap = v.at("closed_form_gap").get<double>();
    const double inflation = v.at("ratio").get<double>();
    if (even) {
      rec.verdict = std::fabs(inflation - 1) <= exact::kDoubleTolerance
                        ? results::Verdict::kControl
                        : results::Verdict::kControlFailed;
    } else {
      rec.verdict = (inflation - 1 > 1e-9 && gap <= exact::kDoubleTolerance)
                        ? results::Verdict::kReproduced
                        : results::Verdict::kNotReproduced;
    }
    records.push_back(rec);
  }
  return records;
}

}  // namespace ddp::mean_of_means
