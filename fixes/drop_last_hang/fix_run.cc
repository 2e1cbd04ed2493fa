#include "fixes/drop_last_hang/fix_run.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device_flag.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "fixes/drop_last_hang/fixes.h"
#include "repro/drop_last_hang/scenario.h"

namespace ddp::drop_last_hang {
namespace {

using results::Json;

struct Row {
  Fix fix;
  Config config;
  bool empty_rank = false;
};

std::vector<Row> RowsOf(const harness::CommonFlags& f, const Cell& cell) {
  const int w = cell.world_size;
  const uint64_t seed = static_cast<uint64_t>(f.seed);
  const Config uneven{.sharding = Sharding::kUnevenShards, .n = UnevenN(f.n, w, cell.batch_size),
                      .world_size = w, .batch_size = cell.batch_size, .seed = seed};
  const Config filtered{.sharding = Sharding::kFilteredBatches, .n = f.n, .world_size = w,
                        .batch_size = cell.filtered_batch_size, .seed = seed};
  // A strided split of W - 1 samples: the last rank never has data.
  const Config empty{.sharding = Sharding::kUnevenShards, .n = w - 1, .world_size = w,
                     .batch_size = cell.batch_size, .seed = seed};
  std::vector<Row> rows = {{Fix::kDropLast, uneven}};
  for (Fix fix : {Fix::kEvenBatches, Fix::kJoin, Fix::kJoinInitialWorldSize}) {
    rows.push_back({fix, uneven});
    rows.push_back({fix, filtered});
  }
  if (w >= 2) {
    for (Fix fix : {Fix::kJoin, Fix::kJoinInitialWorldSize}) rows.push_back({fix, empty, true});
  }
  return rows;
}

// The fewest ranks holding a batch in one step, from the data alone.
int PredictedContributorsMin(const Row& row) {
  const std::vector<Batches> all = AllFixedBatches(row.fix, row.config);
  std::size_t longest = 0;
  for (const Batches& b : all) longest = std::max(longest, b.size());
  int fewest = row.config.world_size;
  for (std::size_t s = 0; s < longest; ++s) {
    int c = 0;
    for (const Batches& b : all) c += s < b.size();
    fewest = std::min(fewest, c);
  }
  return fewest;
}

// One row's result on one rank.
struct RowResult {
  int64_t collectives = 0;  // the collectives this rank called for the row
  int64_t steps = 0;
  int contributors_min = 0;  // fewest ranks with data in one step
  Json step_check;           // its steps vs the one-process steps (exact::StepCheck::ToJson)
  // Rank 0 only (0 on the others): the free-running one-process epoch's
  // steps, and its distance to rank 0's final parameters.
  int64_t reference_steps = 0;
  double trajectory_rel_err = 0;
  Json device_copies;  // on a device: this rank's copies over the row (copy_json.h); else null
};
DDP_JSON_FIELDS(RowResult, collectives, steps, contributors_min, step_check, reference_steps,
                trajectory_rel_err, device_copies)

RowResult RankRow(comm::Comm& comm, const Row& row, device::Device<double>* dev) {
  const int64_t seq0 = comm.next_seq();
  const device::CopyCount copies = dev ? dev->copies() : device::CopyCount{};
  const RankRun run = TrainWithFix(comm, row.fix, row.config, dev);
  RowResult out;
  if (dev) out.device_copies = device::ToJson(dev->copies() - copies);
  out.collectives = comm.next_seq() - seq0;
  out.steps = run.steps;
  out.contributors_min = run.contributors_min;
  out.step_check = run.check.ToJson();
  if (comm.rank() == 0) {
    const SerialRun ref = SerialReference(row.fix, row.config);
    out.reference_steps = ref.steps;
    const auto span = [](const Eigen::VectorXd& v) {
      return std::span<const double>(v.data(), static_cast<std::size_t>(v.size()));
    };
    out.trajectory_rel_err =
        exact::NormwiseRelError(span(run.final_params), span(ref.final_params));
  }
  return out;
}

results::Record RecordOf(const harness::CommonFlags& f, const Row& row, device::Placement placement) {
  const Config& c = row.config;
  results::Record rec;
  rec.bug = "drop_last_hang";
  rec.kind = results::Kind::kFix;
  rec.variant = Name(row.fix);
  rec.backend = f.backend;
  rec.world_size = c.world_size;
  // Key order: the console table shows the first few.
  rec.config["sharding"] = Name(c.sharding);
  rec.config["n"] = static_cast<long long>(c.n);
  rec.config["batch_size"] = c.batch_size;
  rec.config["empty_rank"] = row.empty_rank;
  rec.config["seed"] = static_cast<long long>(c.seed);
  rec.config["checked"] = true;
  rec.config["device"] = device::ToString(placement);
  rec.config["torch_counterpart"] = TorchCounterpart(row.fix);
  const int fewest = PredictedContributorsMin(row);
  if (row.fix == Fix::kJoinInitialWorldSize) {
    // A step with c of W ranks applies sum/W instead of sum/c: every entry
    // scaled by c/W, so the normwise error is exactly 1 - c/W.
    const double expected = 1.0 - static_cast<double>(fewest) / c.world_size;
    rec.reference["expected_grad_rel_err"] = expected;
    if (fewest < c.world_size) rec.expected = results::Verdict::kInexact;
  }
  rec.reference["tolerance"] = exact::kDoubleTolerance;
  rec.reference["contributors_min"] = fewest;
  Json unfixed = Json::array();
  for (int64_t s : StepCounts(c)) unfixed.push_back(static_cast<long long>(s));
  rec.reference["steps_without_fix"] = unfixed;
  return rec;
}

// Fills measured/verdict of `rec` from row `i` of every rank's results
// (`ranks`) and rank 0's (`value`).
void Judge(const std::vector<std::vector<RowResult>>& ranks, const std::vector<RowResult>& value,
           std::size_t i, results::Record& rec) {
  exact::StepCheck check(exact::kDoubleTolerance);
  std::vector<int64_t> collectives;
  bool equal = true;
  for (const std::vector<RowResult>& rows : ranks) {
    const RowResult& r = rows[i];
    check.Merge(exact::StepCheck::FromJson(r.step_check));
    collectives.push_back(r.collectives);
    equal &= r.collectives == collectives.front();
  }
  const RowResult& v = value[i];
  rec.reference["steps"] = v.reference_steps;
  rec.measured["grad_rel_err"] = check.worst("grad");
  rec.measured["steps"] = v.steps;
  rec.measured["equal_collectives"] = equal;
  rec.measured["collectives_per_rank"] = collectives;
  rec.measured["contributors_min"] = v.contributors_min;
  rec.measured["ranks_checked"] = static_cast<int>(ranks.size());
  // Over every rank's steps (steps_checked counts rank-steps).
  rec.measured["step_check"] = check.ToJson();
  rec.measured["trajectory_rel_err"] = v.trajectory_rel_err;
  if (!v.device_copies.is_null()) rec.measured["device_copies"] = v.device_copies;
  const bool exact = equal && check.exact() && v.steps == v.reference_steps;
  rec.verdict = exact ? results::Verdict::kExact : results::Verdict::kInexact;
}

}  // namespace

std::vector<Cell> Cells(const harness::CommonFlags& f, bool sweep) {
  if (!sweep) return {{f.world_size, f.batch_size, 2}};
  std::vector<Cell> cells;
  for (int w : {1, 2, 3, 4, 5, 8}) {
    for (int b : {1, 2, 3, 8}) cells.push_back({w, b, b});
  }
  return cells;
}

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const std::vector<Cell>& cells,
                                    const std::string& device) {
  const device::Placement placement = device::ResolveDeviceFlag(device, f.backend);
  std::vector<results::Record> records;
  for (const Cell& cell : cells) {
    const std::vector<Row> rows = RowsOf(f, cell);
    std::fprintf(stderr, "drop_last_hang fix: W=%d, B=%d (filtered %d), %zu rows...\n",
                 cell.world_size, cell.batch_size, cell.filtered_batch_size, rows.size());
    harness::WorldOptions wo = f.World(cell.world_size);
    wo.checked = true;  // a step-count mismatch would throw CheckError
    const harness::WorldResult world = harness::RunWorld(wo, [&](comm::Comm& comm) {
      const auto dev = device::MakeDevice<double>(placement, device::kDeviceFlag);
      std::vector<RowResult> out;
      for (const Row& row : rows) out.push_back(RankRow(comm, row, dev.get()));
      return Json(out);
    });
    // Every rank's results (all of them came back when the world is ok).
    std::vector<std::vector<RowResult>> ranks;
    if (world.ok) {
      for (const Json& v : world.rank_values) {
        if (!v.is_null()) ranks.push_back(v.get<std::vector<RowResult>>());
      }
    }
    const std::vector<RowResult> value =
        world.ok ? world.value.get<std::vector<RowResult>>() : std::vector<RowResult>{};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      results::Record rec = RecordOf(f, rows[i], placement);
      if (harness::KeptAsError(world, rec, records)) continue;
      Judge(ranks, value, i, rec);
      records.push_back(rec);
    }
  }
  return records;
}

}  // namespace ddp::drop_last_hang
