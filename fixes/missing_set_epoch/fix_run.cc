// fixes/missing_set_epoch: one shared seed and sampler.set_epoch(epoch) at
// the start of every epoch. Each epoch the ranks all-gather what they
// iterate; the global list must be the one-process order of that epoch.
// Then the ranks train with it, every step judged against one process.
#include "fixes/missing_set_epoch/fix_run.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

#include "core/device/device_flag.h"
#include "fixes/missing_set_epoch/training_check.h"
#include "repro/missing_set_epoch/orders.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {
namespace {

using results::Json;

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

TrainConfig TrainingConfig(const harness::CommonFlags& f, const PairOptions& o, int w, int b) {
  TrainConfig c;
  c.order = {.n = f.n, .world_size = w, .seed = f.seed, .epochs = o.epochs};
  c.batch_size = b;
  c.norm = NormFor(f.n, w, b);
  c.device = device::ResolveDeviceFlag(o.device, f.backend);
  return c;
}

// One training row of one rank.
struct TrainingRow {
  int64_t steps = 0;  // steps this rank ran
  Json step_check;    // its steps vs the one-process steps (exact::StepCheck::ToJson)
  // Rank 0 only (0 on the others): its final parameters vs free-running
  // one-process training.
  double trajectory_rel_err = 0;
  Json device_copies;  // this rank's in step 0; null on the host
};
DDP_JSON_FIELDS(TrainingRow, steps, step_check, trajectory_rel_err, device_copies)

// What every rank of a world returns: an order row per dataset size (the
// same on every rank) and a training row per batch size.
struct RankResult {
  std::vector<OrderStats> orders;
  std::vector<TrainingRow> training;
};
DDP_JSON_FIELDS(RankResult, orders, training)

TrainingRow Training(comm::Comm& comm, const TrainConfig& c) {
  const TrainingCheck run = TrainAndCheck(comm, c);
  TrainingRow row;
  row.steps = run.steps;
  row.step_check = run.check.ToJson();
  row.device_copies = run.device_copies;
  if (comm.rank() == 0) {
    const Eigen::VectorXd ref = OneProcessTraining(c);
    row.trajectory_rel_err = exact::NormwiseRelError(
        std::span<const double>(run.final_params.data(), run.final_params.size()),
        std::span<const double>(ref.data(), ref.size()));
  }
  return row;
}

results::Record BaseRecord(const harness::CommonFlags& f, int w) {
  results::Record rec;
  rec.bug = "missing_set_epoch";
  rec.kind = results::Kind::kFix;
  rec.variant = "set_epoch";
  rec.backend = f.backend;
  rec.world_size = w;
  return rec;
}

results::Record OrderRecord(const harness::CommonFlags& f, const PairOptions& o, int w,
                            int64_t n, const harness::WorldResult& world,
                            const RankResult& value, std::size_t i) {
  results::Record rec = BaseRecord(f, w);
  rec.config["experiment"] = "order";
  rec.config["n"] = static_cast<long long>(n);
  rec.config["epochs"] = o.epochs;
  rec.config["seeds"] = f.seeds;
  rec.config["first_seed"] = static_cast<long long>(f.seed);
  if (!world.ok) {
    rec.verdict = results::Verdict::kError;
    rec.error = world.failure;
    return rec;
  }
  const OrderStats& s = value.orders[i];
  const double padding = static_cast<double>(Padding(n, w));
  rec.reference["coverage"] = 1.0;
  rec.reference["padding_duplicates"] = padding;
  rec.reference["max_identical_fraction"] = kMaxIdenticalFraction;
  rec.measured["coverage_min"] = s.coverage_min;
  rec.measured["duplicates_max"] = s.duplicates_max;
  rec.measured["duplicates_mean"] = s.duplicates_mean;
  rec.measured["identical_max"] = s.identical_max;
  rec.measured["matches_one_process"] = s.matches_one_process;
  rec.measured["epochs"] = s.epochs;
  rec.measured["same_as_epoch0"] = s.same_as_epoch0;
  const bool exact = s.matches_one_process == s.epochs && s.coverage_min == 1.0 &&
                     s.duplicates_max == padding && s.duplicates_mean == padding &&
                     s.identical_max <= kMaxIdenticalFraction &&
                     s.same_as_epoch0 == f.seeds;  // only each seed's epoch 0
  rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
  return rec;
}

results::Record TrainingRecord(const harness::CommonFlags& f, const TrainConfig& c,
                               const harness::WorldResult& world, const RankResult& value,
                               const std::vector<RankResult>& ranks, std::size_t i) {
  results::Record rec = BaseRecord(f, c.order.world_size);
  rec.config["experiment"] = "training";
  rec.config["n"] = static_cast<long long>(c.order.n);
  rec.config["batch_size"] = c.batch_size;
  rec.config["epochs"] = c.order.epochs;
  rec.config["norm"] = c.norm == replica::Norm::kBatchNorm ? "batch_norm" : "group_norm";
  rec.config["seed"] = static_cast<long long>(c.order.seed);
  rec.config["lr"] = c.lr;
  rec.config["momentum"] = c.momentum;
  rec.config["device"] = device::ToString(c.device);
  const int64_t steps = StepsPerEpoch(c) * c.order.epochs;
  rec.reference["steps"] = static_cast<long long>(steps);
  rec.reference["tolerance"] = exact::kDoubleTolerance;
  if (!world.ok) {
    rec.verdict = results::Verdict::kError;
    rec.error = world.failure;
    return rec;
  }
  exact::StepCheck check(exact::kDoubleTolerance);
  bool all_steps = true;
  for (const RankResult& rank : ranks) {
    const TrainingRow& row = rank.training[i];
    check.Merge(exact::StepCheck::FromJson(row.step_check));
    all_steps &= row.steps == steps;
  }
  const TrainingRow& row = value.training[i];  // rank 0's
  rec.measured["grad_rel_err"] = check.worst("grad");
  rec.measured["worst_rel_err"] = check.worst();
  rec.measured["steps"] = row.steps;
  rec.measured["ranks_checked"] = static_cast<int>(ranks.size());
  rec.measured["every_rank_all_steps"] = all_steps;
  // Over every rank's steps (steps_checked counts rank-steps).
  rec.measured["step_check"] = check.ToJson();
  rec.measured["trajectory_rel_err"] = row.trajectory_rel_err;
  if (!row.device_copies.is_null()) rec.measured["device_copies"] = row.device_copies;  // rank 0's
  rec.verdict = all_steps && check.exact() ? results::Verdict::kExact : results::Verdict::kInexact;
  return rec;
}

}  // namespace

FixGrid Grid(const harness::CommonFlags& f, const PairOptions& o) {
  if (!o.sweep) return {Sorted({2, f.world_size}), {f.batch_size}};
  return {Sorted({1, 2, 3, 4, 5, 8, f.world_size}), Sorted({1, 2, 3, 8, f.batch_size})};
}

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairOptions& o,
                                    const FixGrid& grid) {
  std::vector<results::Record> records;
  const std::vector<int64_t> ns = DatasetSizes(f, o);
  for (int w : grid.world_sizes) {
    std::fprintf(stderr,
                 "missing_set_epoch fix: W=%d, orders: %d seeds x %d epochs; training: %zu "
                 "batch sizes...\n",
                 w, f.seeds, o.epochs, grid.batch_sizes.size());
    std::vector<TrainConfig> trainings;
    for (int b : grid.batch_sizes) trainings.push_back(TrainingConfig(f, o, w, b));
    const harness::WorldResult world = harness::RunWorld(f.World(w), [&](comm::Comm& comm) {
      RankResult out;
      for (int64_t n : ns) {
        const OrderConfig c{.n = n, .world_size = w, .seed = f.seed, .epochs = o.epochs};
        out.orders.push_back(MeasureOrders(comm, Mode::kSetEpoch, c, f.seed, f.seeds));
      }
      for (const TrainConfig& c : trainings) out.training.push_back(Training(comm, c));
      return Json(out);
    });
    // Every rank's result (all of them came back when the world is ok).
    std::vector<RankResult> ranks;
    if (world.ok) {
      for (const Json& v : world.rank_values) {
        if (!v.is_null()) ranks.push_back(v.get<RankResult>());
      }
    }
    const RankResult value = world.ok ? world.value.get<RankResult>() : RankResult{};
    for (std::size_t i = 0; i < ns.size(); ++i) {
      records.push_back(OrderRecord(f, o, w, ns[i], world, value, i));
    }
    for (std::size_t i = 0; i < trainings.size(); ++i) {
      records.push_back(TrainingRecord(f, trainings[i], world, value, ranks, i));
    }
  }
  return records;
}

}  // namespace ddp::missing_set_epoch
