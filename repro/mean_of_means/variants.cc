// repro/mean_of_means: averaging per-rank averages (seed 004).
//
// Each rank averages accuracy and loss over its own samples — or, as the
// seed's code does, all-reduces every step's batch average and divides by W
// — and the result is compared with the one-process value over the N
// distinct samples. Two variants here, and Lightning's (lightning.cc):
//   rank_mean  all_reduce(local mean) / W, once at the end of evaluation
//   step_mean  every step: all_reduce(batch mean) / W, accumulated by an
//              AverageMeter weighted by the local batch size (seed 004's
//              reduce_tensor + meter.update(v, images.size(0)))
// The bias is asserted against its closed form (the same arithmetic done
// serially from every rank's share), so the table shows the real error of
// the real collective, not an estimate.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "repro/mean_of_means/variants.h"
#include "core/device/copy_json.h"
#include "core/device/device_allreduce.h"
#include "core/device/device_flag.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "core/harness/pair_main.h"
#include "repro/mean_of_means/lightning.h"
#include "repro/mean_of_means/scenario.h"
#include "repro/mean_of_means/sweep.h"

namespace ddp::mean_of_means {
namespace {

using results::Json;

// The value rank `rank` contributes under `variant`, and the closed form of
// what the ranks end up with (computed without communication).
struct Naive {
  double accuracy = 0;
  double loss = 0;
};

double Mean(const std::vector<Outcome>& v, double Outcome::*field) {
  double s = 0;
  for (const Outcome& o : v) s += o.*field;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::vector<Outcome> Flatten(const RankBatches& b) {
  std::vector<Outcome> out;
  for (const auto& batch : b) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

// rank_mean through the engine: one allreduce of (mean acc, mean loss).
Naive RankMeanCollective(comm::Comm& comm, const RankBatches& mine, device::Device<double>* dev) {
  const std::vector<Outcome> all = Flatten(mine);
  std::vector<double> v = {Mean(all, &Outcome::correct), Mean(all, &Outcome::loss)};
  device::AllreduceOnDevice(comm, dev, std::span<double>(v), device::CopyKind::kStatistic);
  const double w = comm.world_size();
  return {v[0] / w, v[1] / w};
}

Naive RankMeanClosedForm(const Config& c) {
  Naive n;
  for (int r = 0; r < c.world_size; ++r) {
    const std::vector<Outcome> all = Flatten(RankShare(c, r));
    n.accuracy += Mean(all, &Outcome::correct) / c.world_size;
    n.loss += Mean(all, &Outcome::loss) / c.world_size;
  }
  return n;
}

// step_mean through the engine: one allreduce per step, as the seed does.
Naive StepMeanCollective(comm::Comm& comm, const RankBatches& mine, device::Device<double>* dev) {
  double acc_sum = 0, loss_sum = 0, weight = 0;
  for (const auto& batch : mine) {
    std::vector<double> v = {Mean(batch, &Outcome::correct), Mean(batch, &Outcome::loss)};
    device::AllreduceOnDevice(comm, dev, std::span<double>(v), device::CopyKind::kStatistic);
    const double n = static_cast<double>(batch.size());
    acc_sum += v[0] / comm.world_size() * n;
    loss_sum += v[1] / comm.world_size() * n;
    weight += n;
  }
  return {acc_sum / weight, loss_sum / weight};
}

Naive StepMeanClosedForm(const Config& c, int rank) {
  std::vector<RankBatches> shares;
  for (int r = 0; r < c.world_size; ++r) shares.push_back(RankShare(c, r));
  double acc_sum = 0, loss_sum = 0, weight = 0;
  for (std::size_t s = 0; s < shares[rank].size(); ++s) {
    double acc = 0, loss = 0;
    for (int r = 0; r < c.world_size; ++r) {
      acc += Mean(shares[r][s], &Outcome::correct);
      loss += Mean(shares[r][s], &Outcome::loss);
    }
    const double n = static_cast<double>(shares[rank][s].size());
    acc_sum += acc / c.world_size * n;
    loss_sum += loss / c.world_size * n;
    weight += n;
  }
  return {acc_sum / weight, loss_sum / weight};
}

// Ranks with different step counts would leave an allreduce unmatched: that
// is the drop_last_hang bug, not this one, so step_mean skips such rows.
bool EqualSteps(const Config& c) {
  const std::size_t steps = RankShare(c, 0).size();
  for (int r = 1; r < c.world_size; ++r) {
    if (RankShare(c, r).size() != steps) return false;
  }
  return true;
}

constexpr const char* kVariants[] = {"rank_mean", "step_mean"};

// One variant of a row over its seeds, as rank 0 sees it.
struct VariantResult {
  bool skipped = false;           // step_mean on a row whose ranks take different step counts
  double accuracy = 0;            // the first seed's
  double reference_accuracy = 0;  // the first seed's one-process value
  double max_abs_error = 0;       // accuracy
  double mean_abs_error = 0;      // accuracy
  double max_loss_abs_error = 0;
  double closed_form_gap = 0;     // engine vs the serial closed form, accuracy and loss
  Json device_copies;             // the first seed's (copy_json.h); null on the host
};
DDP_JSON_FIELDS(VariantResult, skipped, accuracy, reference_accuracy, max_abs_error,
                mean_abs_error, max_loss_abs_error, closed_form_gap, device_copies)

// A row's results per variant, by variant name.
using RowResult = std::map<std::string, VariantResult>;

// Runs every row of world size `w` on one world of ranks; rank 0 returns,
// per row and variant, the worst errors over the seeds.
std::vector<RowResult> RunRows(comm::Comm& comm, const std::vector<Row>& rows, const std::string& device) {
  const auto dev = device::MakeDevice<double>(device::ResolveDeviceFlag(device, comm.backend()), device::kDeviceFlag);
  std::vector<RowResult> out;
  for (const Row& row : rows) {
    RowResult per_variant;
    for (const char* variant : kVariants) {
      const bool step = std::string(variant) == "step_mean";
      VariantResult& v = per_variant[variant];
      double sum_err = 0;
      for (int k = 0; k < row.seeds; ++k) {
        Config c = row.config;
        c.seed = row.first_seed + static_cast<std::uint64_t>(k);
        if (step && !EqualSteps(c)) {
          v.skipped = true;
          break;
        }
        const RankBatches mine = RankShare(c, comm.rank());
        const device::CopyCount copies = dev ? dev->copies() : device::CopyCount{};
        const Naive got = step ? StepMeanCollective(comm, mine, dev.get()) : RankMeanCollective(comm, mine, dev.get());
        if (dev && k == 0) v.device_copies = device::ToJson(dev->copies() - copies);
        const Naive formula = step ? StepMeanClosedForm(c, comm.rank()) : RankMeanClosedForm(c);
        const Global ref = Reference(c);
        const double err = got.accuracy - ref.accuracy;
        if (k == 0) {
          v.accuracy = got.accuracy;
          v.reference_accuracy = ref.accuracy;
        }
        v.max_abs_error = std::max(v.max_abs_error, std::fabs(err));
        sum_err += std::fabs(err);
        v.max_loss_abs_error = std::max(v.max_loss_abs_error, std::fabs(got.loss - ref.loss));
        v.closed_form_gap = std::max({v.closed_form_gap, std::fabs(got.accuracy - formula.accuracy),
                                      std::fabs(got.loss - formula.loss)});
      }
      v.mean_abs_error = sum_err / row.seeds;
    }
    out.push_back(per_variant);
  }
  return out;
}

}  // namespace

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, bool sweep, bool lightning,
                                      const std::string& device) {
  const std::string placed = device::ToString(device::ResolveDeviceFlag(device, f.backend));
  const std::vector<Row> rows = Rows(f, sweep);
  std::vector<results::Record> records;
  for (int w : WorldSizes(rows)) {
    const std::vector<Row> mine = RowsOf(rows, w);
    std::fprintf(stderr, "mean_of_means: W=%d, %zu configurations x %d seeds...\n", w,
                 mine.size(), f.seeds);
    const harness::WorldResult world =
        harness::RunWorld(f.World(w), [&](comm::Comm& comm) { return Json(RunRows(comm, mine, device)); });
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const bool even = EvenSplit(mine[i].config);
      for (const char* variant : kVariants) {
        results::Record rec;
        rec.bug = "mean_of_means";
        rec.kind = results::Kind::kRepro;
        rec.variant = variant;
        rec.backend = f.backend;
        rec.world_size = w;
        rec.config = ConfigJson(mine[i]);
        rec.control = even;
        rec.config["device"] = placed;
        if (harness::KeptAsError(world, rec, records)) continue;
        const VariantResult v = world.value[i].get<RowResult>().at(variant);
        if (v.skipped) continue;  // unequal steps: see drop_last_hang
        rec.reference["accuracy"] = v.reference_accuracy;
        rec.measured["accuracy"] = v.accuracy;
        rec.measured["error"] = v.max_abs_error;
        rec.measured["mean_abs_error"] = v.mean_abs_error;
        rec.measured["max_loss_abs_error"] = v.max_loss_abs_error;
        rec.measured["closed_form_gap"] = v.closed_form_gap;
        if (!v.device_copies.is_null()) rec.measured["device_copies"] = v.device_copies;
        // The symptom: a bias, of exactly the size the closed form predicts.
        // The control: no padding, equal splits -> exact.
        if (even) {
          rec.verdict = v.max_abs_error <= exact::kDoubleTolerance
                            ? results::Verdict::kControl
                            : results::Verdict::kControlFailed;
        } else {
          rec.verdict = (v.max_abs_error > 1e-9 && v.closed_form_gap <= exact::kDoubleTolerance)
                            ? results::Verdict::kReproduced
                            : results::Verdict::kNotReproduced;
        }
        records.push_back(rec);
      }
    }
  }
  // Lightning's integer batch-size accumulator (lightning.cc): W = 16, Gloo.
  if (lightning) {
    for (results::Record& rec : RunLightning(f, device)) records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace ddp::mean_of_means
