// repro/small_batch_bn: BatchNorm with 2 samples per rank under DDP (seed 003).
//
// Every row trains on W ranks (one process each, Gloo) for --seeds seeds and
// compares the final validation error with SyncBatchNorm at the same global
// batch (W x b), seed by seed (same initialisation, data order and noise):
//   per_rank_bn  DDP + plain BatchNorm (PyTorch's default: per-rank
//                statistics, rank 0's buffers broadcast). Symptom, at b <= 4
//                per rank: the error is higher than SyncBN's, the 95%
//                interval of the paired difference above 0 (reproduced). At
//                b >= 8 the row is a control: the damage is gone (|gap| < 2 pp).
//                On tiny_images (this pair's first task), under the current
//                protocol and under the first one (6 epochs, constant
//                learning rate), the rows are the counter-example: controls
//                whose expected outcome is no significant damage (the
//                interval of the difference includes 0).
//   precise_bn   per_rank_bn + PreciseBN (running statistics recomputed as a
//                true average before every evaluation). Same verdicts: at
//                b <= 4 the damage survives exact population statistics, so
//                it is not a running-statistics problem.
//   group_norm   DDP + GroupNorm (4 groups): no batch statistics. A control
//                row: no small-batch damage of its own (its error at b is
//                not above its error at b = 32 by more than 2 pp). Its gap to
//                SyncBN is reported, not judged (README).
//   grad_accum   (sweep) b = 2 per rank x 4 accumulated micro-batches vs a
//                real batch of 8 per rank (same global batch 32): the
//                statistics stay those of 2 samples (rank spread sqrt(4) = 2x
//                the real batch's, accepted 1.4-2.8): reproduced.
//   bn_eval      (sweep: b = 2, from epoch 0 and from half-way) seed 003's
//                debug step: per_rank_bn with the BN layers in eval mode
//                while training from epoch E on. The post says the curve is
//                then "clearly steadier (final accuracy may drop slightly)".
//                Judged seed by seed against per_rank_bn (same seeds, the
//                same run up to epoch E): the largest epoch-to-epoch rise of
//                the validation error over the epochs from max(E, 1) on;
//                reproduced when per_rank_bn's minus bn_eval's has a 95%
//                interval above 0. Expected: not reproduced (what the sweep
//                measured; README). The final-error difference to
//                per_rank_bn is reported, not judged.
//   lever        (--levers, b = --batch_size) seed 003's "turning off
//                augmentation or changing the optimizer or learning rate
//                does not help": per_rank_bn against SyncBN, both under the
//                lever: the learning rate x0.25 and x4, plain SGD (momentum
//                0), Adam (torch.optim.Adam's defaults, lr 1e-3 at the peak
//                of the same warm-up and cosine schedule), the training
//                noise drawn once (no augmentation).
//                Reproduced (the lever does not help) when the gap's 95%
//                interval stays above 0, as per_rank_bn's.
// Secondary columns: training error (does the model underfit?), the cross-rank
// spread of the batch means, the running-stat error.
#include "repro/small_batch_bn/variants.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "repro/small_batch_bn/seed_stats.h"

namespace ddp::small_batch_bn {
namespace {

using results::Json;

double Field(const Json& j, const char* k) { return j.at(k).get<double>(); }

// The damage is "gone" when per-rank BN is within this of SyncBN.
constexpr double kNoDamage = 0.02;

Task ParseTask(const std::string& s) { return s == "tiny_images" ? Task::kTinyImages : Task::kDigits; }

struct Row {
  std::string variant;
  Task task;
  int batch;
  int accumulate = 1;
  bool first_protocol = false;  // this pair's first training protocol (see FirstProtocol)
  int bn_eval_from = -1;        // bn_eval: the first epoch trained with the BN layers in eval mode
  std::string lever = "";       // lever: one of kLevers ("": none)
};

// The lever rows' changes to the base configuration (ApplyLever).
const char* const kLevers[] = {"lr_x0.25", "lr_x4", "momentum_0", "adam", "no_augmentation"};

void ApplyLever(const std::string& lever, TrainConfig* c) {
  if (lever == "lr_x0.25") c->base_lr *= 0.25;
  if (lever == "lr_x4") c->base_lr *= 4;
  if (lever == "momentum_0") c->momentum = 0;
  if (lever == "adam") c->optimizer = Optimizer::kAdam;
  if (lever == "no_augmentation") c->task.fresh_noise = false;
}

// The first version of this pair trained 6 epochs at a constant learning rate
// 0.05 (global batch 8) and found no damage on TinyImages.
void FirstProtocol(TrainConfig* c) {
  c->epochs = 6;
  c->warmup_epochs = 0;
  c->cosine = false;
  c->base_lr = 0.05 * 32 / 8;
}

std::vector<Row> Rows(const harness::CommonFlags& f, const PairOptions& o) {
  const Task task = ParseTask(o.task);
  if (o.levers) {
    std::vector<Row> rows;
    for (const char* l : kLevers) rows.push_back({"lever", task, f.batch_size, 1, false, -1, l});
    return rows;
  }
  if (!o.sweep) {
    if (o.bn_eval_from_epoch >= 0) return {{"bn_eval", task, f.batch_size, 1, false, o.bn_eval_from_epoch}};
    return {{"per_rank_bn", task, f.batch_size}};
  }
  std::vector<Row> rows;
  for (int b : o.sweep_batches) {
    for (const char* v : {"per_rank_bn", "precise_bn", "group_norm"}) rows.push_back({v, Task::kDigits, b});
  }
  if (!o.sweep_extras) return rows;
  rows.push_back({"grad_accum", Task::kDigits, 2, 4});
  rows.push_back({"per_rank_bn", Task::kTinyImages, 2});
  rows.push_back({"per_rank_bn", Task::kTinyImages, 2, 1, true});
  rows.push_back({"bn_eval", Task::kDigits, 2, 1, false, 0});
  rows.push_back({"bn_eval", Task::kDigits, 2, 1, false, o.epochs / 2});
  return rows;
}

// What one row trains: (norm, PreciseBN, task, b, accumulate, protocol, BN eval from).
struct RunKey {
  NormKind norm;
  bool precise;
  Task task;
  int batch;
  int accumulate;
  bool first_protocol = false;
  int bn_eval_from = -1;
  std::string lever = "";
  auto operator<=>(const RunKey&) const = default;
};

std::string Describe(const RunKey& k, int w) {
  return std::string(ToString(k.norm)) + (k.precise ? "+precise_bn" : "") + " on " + ToString(k.task) + ", W=" +
         std::to_string(w) + " x b=" + std::to_string(k.batch) +
         (k.accumulate > 1 ? " x " + std::to_string(k.accumulate) + " accumulated" : "") +
         (k.first_protocol ? ", first protocol" : "") +
         (k.bn_eval_from >= 0 ? ", BN layers in eval mode from epoch " + std::to_string(k.bn_eval_from) : "") +
         (k.lever.empty() ? "" : ", lever " + k.lever);
}

// Per seed, the largest rise of the validation error from epoch e - 1 to e
// over e >= from (from >= 1); 0 when it never rises there.
std::vector<double> MaxRises(const std::vector<TrainResult>& runs, int from) {
  std::vector<double> out;
  for (const TrainResult& r : runs) {
    double rise = 0;
    for (std::size_t e = static_cast<std::size_t>(from); e < r.val_error.size(); ++e) {
      rise = std::max(rise, r.val_error[e] - r.val_error[e - 1]);
    }
    out.push_back(rise);
  }
  return out;
}

// seed 003's debug step against per_rank_bn, seed by seed (variants.cc's
// header): the swing over the epochs from max(E, 1) on and the final error.
void JudgeBnEval(int from_epoch, const std::vector<TrainResult>& eval, const std::vector<TrainResult>& per_rank,
                 results::Record* rec) {
  if (eval.size() != per_rank.size()) throw std::invalid_argument("JudgeBnEval: different numbers of seeds");
  const int from = std::max(from_epoch, 1);
  const std::vector<double> mine = MaxRises(eval, from), theirs = MaxRises(per_rank, from);
  std::vector<double> cut;
  for (std::size_t k = 0; k < mine.size(); ++k) cut.push_back(theirs[k] - mine[k]);
  const SeedStats s = Summarize(cut);
  Json& m = rec->measured;
  m["swing_from_epoch"] = from;
  m["val_error_max_rises_from"] = Json(mine);
  m["per_rank_bn_max_rises_from"] = Json(theirs);
  m["swing_cut"] = s.mean;  // per_rank_bn's largest rise minus bn_eval's, mean over seeds
  m["swing_cut_ci95"] = s.ci95;
  m["val_error_mean_max_rise_from"] = Summarize(mine).mean;
  m["per_rank_bn_mean_max_rise_from"] = Summarize(theirs).mean;
  const Json vs = Gap(eval, per_rank);
  m["val_error_minus_per_rank_bn"] = vs.at("val_error_gap");
  m["val_error_minus_per_rank_bn_ci95"] = vs.at("val_error_gap_ci95");
  const Json theirs_summary = Summary(per_rank);
  m["per_rank_bn_val_error"] = theirs_summary.at("val_error");
  m["per_rank_bn_val_error_per_epoch_by_seed"] = theirs_summary.at("val_error_per_epoch_by_seed");
  rec->verdict = s.mean - s.ci95 > 0 ? results::Verdict::kReproduced : results::Verdict::kNotReproduced;
  // What the sweep measured at 5 seeds, from epoch 0 and from half-way
  // (README.md, "BN layers in eval mode"): not steadier. A run that comes
  // out steadier differs from that record and is flagged.
  rec->expected = results::Verdict::kNotReproduced;
}

}  // namespace

std::string ValidateOptions(const PairOptions& o) {
  if (o.task != "digits" && o.task != "tiny_images") {
    return "--task must be digits or tiny_images (got " + o.task + ")";
  }
  if (!(o.noise >= 0 && o.noise <= 10)) return "--noise must be in [0, 10]";
  if (!(o.warmup_epochs >= 0 && o.warmup_epochs <= o.epochs)) return "--warmup_epochs must be in [0, --epochs]";
  if (o.sweep && o.sweep_batches.empty() && !o.sweep_extras) {
    return "--sweep_batches is empty and --sweep_extras=false: the sweep would have no rows";
  }
  if (o.levers && (o.sweep || o.bn_eval_from_epoch >= 0)) {
    return "--levers is a run of its own: not with --sweep or --bn_eval_from_epoch";
  }
  if (o.levers && o.task != "digits") {
    return "--levers runs on --task digits only (its no_augmentation lever fixes the digits' pixel noise; "
           "tiny_images has none to fix)";
  }
  if (o.bn_eval_from_epoch >= 0 && o.sweep) {
    return "--bn_eval_from_epoch is for one run, not --sweep (the sweep's bn_eval rows start at epoch 0 and at "
           "--epochs / 2)";
  }
  if (!(o.bn_eval_from_epoch >= -1 && o.bn_eval_from_epoch < o.epochs)) {
    return "--bn_eval_from_epoch must be -1 (never) or in [0, --epochs - 1] (got " +
           std::to_string(o.bn_eval_from_epoch) + ")";
  }
  return "";
}

TrainConfig BaseConfig(const harness::CommonFlags& f, const PairOptions& o) {
  TrainConfig c;
  c.task.task = ParseTask(o.task);
  c.task.noise = o.noise;
  c.world_size = f.world_size;
  c.batch_per_rank = f.batch_size;
  c.epochs = o.epochs;
  c.base_lr = o.base_lr;
  c.warmup_epochs = o.warmup_epochs;
  c.cosine = o.cosine;
  c.precise_batches = o.precise_batches;
  c.placement = o.placement;
  return c;
}

std::vector<TrainResult> RunDdp(const harness::CommonFlags& f, TrainConfig cfg) {
  std::vector<TrainResult> out;
  harness::WorldOptions world = f.World(cfg.world_size);
  // A whole training run may take minutes on a busy machine; every
  // collective keeps its own deadline (--timeout), which catches a hang.
  world.world_deadline_s = 3600;
  for (int k = 0; k < f.seeds; ++k) {
    cfg.task.seed = static_cast<uint64_t>(f.seed + k);
    const harness::WorldResult w = harness::RunWorld(world, [&](comm::Comm& comm) { return ToJson(Train(&comm, cfg)); });
    if (!w.ok) throw std::runtime_error(w.failure);
    out.push_back(FromJson(w.value));  // rank 0's result (the ranks were other processes)
    for (const Json& r : w.rank_values) {
      out.back().ranks_device_copies.push_back(r.at("first_step_device_copies"));
      out.back().ranks_comm_staging.push_back(r.at("first_step_comm_staging"));
    }
  }
  return out;
}

std::vector<TrainResult> RunOneProcess(const harness::CommonFlags& f, TrainConfig cfg) {
  std::vector<TrainResult> out;
  for (int k = 0; k < f.seeds; ++k) {
    cfg.task.seed = static_cast<uint64_t>(f.seed + k);
    out.push_back(Train(nullptr, cfg));
  }
  return out;
}

Json Summary(const std::vector<TrainResult>& runs) {
  std::vector<double> final_err;
  for (const TrainResult& r : runs) final_err.push_back(r.val_error.back());
  const SeedStats s = Summarize(final_err);
  Json j;
  j["val_error"] = s.mean;
  j["val_error_ci95"] = s.ci95;
  j["seeds"] = s.n;
  Json per = Json::array();
  for (double e : final_err) per.push_back(e);
  j["val_errors"] = per;
  auto mean_of = [&](auto get) {
    double m = 0;
    for (const TrainResult& r : runs) m += get(r) / static_cast<double>(runs.size());
    return m;
  };
  j["train_error"] = mean_of([](const TrainResult& r) { return r.train_error; });
  // -1 marks "not applicable" (GroupNorm has no running stats; one rank no spread).
  j["rank_spread1"] = mean_of([](const TrainResult& r) { return r.rank_spread1; });
  j["rank_spread2"] = mean_of([](const TrainResult& r) { return r.rank_spread2; });
  j["rs_mean_err"] = mean_of([](const TrainResult& r) { return r.rs_mean_err; });
  j["rs_var_err"] = mean_of([](const TrainResult& r) { return r.rs_var_err; });
  if (runs.front().rs_mean_err_before_precise >= 0) {
    j["rs_mean_err_before_precise"] = mean_of([](const TrainResult& r) { return r.rs_mean_err_before_precise; });
    j["rs_var_err_before_precise"] = mean_of([](const TrainResult& r) { return r.rs_var_err_before_precise; });
  }
  Json curve = Json::array();  // mean validation error per epoch
  for (std::size_t e = 0; e < runs.front().val_error.size(); ++e) {
    curve.push_back(mean_of([&](const TrainResult& r) { return r.val_error[e]; }));
  }
  j["val_error_per_epoch"] = curve;
  // The seed's "validation accuracy swings by about +-10 pp" is about one
  // run's epoch-to-epoch jumps, which the seed-averaged curve smooths away:
  // per seed, the largest rise of the validation error from one epoch to the
  // next (learning only lowers it, so a rise is the swing), and each seed's
  // whole curve, so the swing can be read again another way.
  const std::vector<double> rises = MaxRises(runs, 1);
  Json by_seed = Json::array();
  double max_rise = 0, mean_rise = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    max_rise = std::max(max_rise, rises[k]);
    mean_rise += rises[k] / static_cast<double>(runs.size());
    by_seed.push_back(Json(runs[k].val_error));
  }
  j["val_error_max_rises"] = Json(rises);
  j["val_error_max_rise"] = max_rise;
  j["val_error_mean_max_rise"] = mean_rise;
  j["val_error_per_epoch_by_seed"] = by_seed;
  // Per rank, the first seed's first optimizer step (task.h StepCopies).
  if (const TrainResult& r = runs.front(); !r.ranks_comm_staging.empty()) {
    Json staging = Json::array(), copies = Json::array();
    for (const Json& s : r.ranks_comm_staging) staging.push_back(s);
    for (const Json& c : r.ranks_device_copies) {
      if (!c.is_null()) copies.push_back(c);
    }
    j["comm_staging"] = staging;
    if (!copies.empty()) j["device_copies"] = copies;
  }
  return j;
}

Json Gap(const std::vector<TrainResult>& a, const std::vector<TrainResult>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("Gap: different numbers of seeds");
  std::vector<double> d;
  for (std::size_t k = 0; k < a.size(); ++k) d.push_back(a[k].val_error.back() - b[k].val_error.back());
  const SeedStats s = Summarize(d);
  Json j;
  j["val_error_gap"] = s.mean;
  j["val_error_gap_ci95"] = s.ci95;
  return j;
}

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairOptions& o) {
  std::map<RunKey, std::vector<TrainResult>> cache;
  std::map<RunKey, std::string> failed;
  // Trains (once per key) and returns the runs, or throws the failure.
  auto runs = [&](const RunKey& k) -> const std::vector<TrainResult>& {
    if (auto it = failed.find(k); it != failed.end()) throw std::runtime_error(it->second);
    if (auto it = cache.find(k); it != cache.end()) return it->second;
    TrainConfig cfg = BaseConfig(f, o);
    cfg.task.task = k.task;
    cfg.norm = k.norm;
    cfg.precise_bn = k.precise;
    cfg.batch_per_rank = k.batch;
    cfg.accumulate = k.accumulate;
    cfg.bn_eval_from_epoch = k.bn_eval_from;
    if (k.first_protocol) FirstProtocol(&cfg);
    ApplyLever(k.lever, &cfg);
    const bool one_process = k.norm == NormKind::kSyncBatchNorm && !o.sync_bn_ddp;
    std::fprintf(stderr, "small_batch_bn: %s%s, %d seeds...\n", Describe(k, f.world_size).c_str(),
                 one_process ? " (one process replaying the ranks)" : "", f.seeds);
    try {
      return cache.emplace(k, one_process ? RunOneProcess(f, cfg) : RunDdp(f, cfg)).first->second;
    } catch (const std::exception& e) {
      failed[k] = e.what();
      throw;
    }
  };

  std::vector<results::Record> records;
  for (const Row& row : Rows(f, o)) {
    results::Record rec;
    rec.bug = "small_batch_bn";
    rec.kind = results::Kind::kRepro;
    rec.variant = row.variant;
    rec.backend = f.backend;
    rec.world_size = f.world_size;
    rec.config["task"] = ToString(row.task);
    rec.config["batch_per_rank"] = row.batch;
    rec.config["accumulate"] = row.accumulate;
    rec.config["global_batch"] = f.world_size * row.batch * row.accumulate;
    TrainConfig shown = BaseConfig(f, o);
    if (row.first_protocol) FirstProtocol(&shown);
    ApplyLever(row.lever, &shown);
    rec.config["protocol"] = row.first_protocol ? "first" : "current";
    rec.config["epochs"] = shown.epochs;
    rec.config["base_lr"] = shown.base_lr;
    shown.world_size = f.world_size;
    shown.batch_per_rank = row.batch;
    shown.accumulate = row.accumulate;
    rec.config["peak_lr"] = PeakLearningRate(shown);
    rec.config["warmup_epochs"] = shown.warmup_epochs;
    rec.config["lr_schedule"] = shown.cosine ? "cosine" : "constant";
    if (row.task == Task::kDigits) rec.config["noise"] = o.noise;
    rec.config["seed"] = static_cast<double>(f.seed);
    rec.config["norm_device"] = device::ToString(device::Resolve(o.placement, f.backend));
    if (row.bn_eval_from >= 0) rec.config["bn_eval_from_epoch"] = row.bn_eval_from;
    if (!row.lever.empty()) {
      rec.config["lever"] = row.lever;
      rec.config["optimizer"] = shown.optimizer == Optimizer::kAdam ? "adam" : "sgd";
      if (shown.optimizer == Optimizer::kSgd) rec.config["momentum"] = shown.momentum;
      rec.config["fresh_noise"] = shown.task.fresh_noise;
    }
    const bool accum = row.variant == "grad_accum";
    const bool small = row.batch <= 4;
    try {
      const RunKey sync{NormKind::kSyncBatchNorm, false, row.task, row.batch, row.accumulate, row.first_protocol, -1,
                        row.lever};
      RunKey mine{NormKind::kBatchNorm, false, row.task, row.batch, row.accumulate, row.first_protocol};
      if (row.variant == "precise_bn") mine.precise = true;
      if (row.variant == "group_norm") mine.norm = NormKind::kGroupNorm;
      mine.bn_eval_from = row.bn_eval_from;
      mine.lever = row.lever;
      const std::vector<TrainResult>& got = runs(mine);
      rec.measured = Summary(got);
      if (accum) {
        // The reference: a real batch of b x accumulate per rank, same global batch.
        const RunKey real{NormKind::kBatchNorm, false, row.task, row.batch * row.accumulate, 1};
        const std::vector<TrainResult>& ref = runs(real);
        rec.reference["what"] = "DDP + BN, a real batch of " + std::to_string(real.batch) + " per rank";
        const Json ref_summary = Summary(ref), gap = Gap(got, ref);  // named: AsObject() refers into them
        for (const auto& [k, v] : ref_summary.items()) rec.reference[k] = v;
        for (const auto& [k, v] : gap.items()) rec.measured[k] = v;
        // Sampling theory: the spread of b-sample means scales as 1/sqrt(b), so
        // statistics of b = 2 (accumulated or not) vs a real batch of 8 differ
        // by sqrt(4) = 2 if accumulation does nothing for BN; 1 if it helped.
        const double ratio = Field(rec.measured, "rank_spread2") / Field(rec.reference, "rank_spread2");
        rec.measured["rank_spread_ratio"] = ratio;
        rec.reference["rank_spread_ratio_expected"] = std::sqrt(static_cast<double>(row.accumulate));
        rec.verdict = ratio >= 1.4 && ratio <= 2.8 ? results::Verdict::kReproduced : results::Verdict::kNotReproduced;
      } else {
        const std::vector<TrainResult>& ref = runs(sync);
        rec.reference["what"] = "SyncBN, the same global batch (" + std::to_string(f.world_size * row.batch) + ")";
        rec.reference["computed_by"] = o.sync_bn_ddp ? "ddp" : "one_process";
        const Json ref_summary = Summary(ref), gap = Gap(got, ref);  // named: AsObject() refers into them
        for (const auto& [k, v] : ref_summary.items()) rec.reference[k] = v;
        for (const auto& [k, v] : gap.items()) rec.measured[k] = v;
        const double g = Field(gap, "val_error_gap"), ci = Field(gap, "val_error_gap_ci95");
        std::printf("small_batch_bn: %-11s %-11s W=%d b=%-2d  val error %.1f%% +- %.1f vs SyncBN %.1f%% +- %.1f: "
                    "gap %+.1f pp, 95%% interval [%+.1f, %+.1f] (%d seeds)\n",
                    row.variant.c_str(), ToString(row.task), f.world_size, row.batch,
                    100 * Field(rec.measured, "val_error"), 100 * Field(rec.measured, "val_error_ci95"),
                    100 * Field(rec.reference, "val_error"), 100 * Field(rec.reference, "val_error_ci95"), 100 * g,
                    100 * (g - ci), 100 * (g + ci), f.seeds);
        std::fflush(stdout);
        if (row.variant == "group_norm") {
          // GroupNorm has no batch statistics, so it has no small-batch
          // damage of its own: its error at b is not above its error at the
          // largest per-rank batch (32) by more than 2 pp. Whether it matches
          // SyncBN (the GroupNorm paper: within ~0.5 pp) is reported in
          // val_error_gap, not judged here (README: where and why not).
          rec.control = true;
          const std::vector<TrainResult>& gn32 = runs({NormKind::kGroupNorm, false, row.task, 32, 1});
          const Json vs32 = Gap(got, gn32);
          rec.measured["val_error_minus_b32"] = Field(vs32, "val_error_gap");
          rec.measured["val_error_minus_b32_ci95"] = Field(vs32, "val_error_gap_ci95");
          rec.verdict = Field(vs32, "val_error_gap") < kNoDamage ? results::Verdict::kControl
                                                                  : results::Verdict::kControlFailed;
        } else if (row.variant == "bn_eval") {
          const RunKey per_rank{NormKind::kBatchNorm, false, row.task, row.batch, row.accumulate, row.first_protocol};
          JudgeBnEval(row.bn_eval_from, got, runs(per_rank), &rec);
          std::printf("small_batch_bn: bn_eval from epoch %d: largest rise from epoch %d on, per_rank_bn's minus "
                      "bn_eval's %+.1f pp, 95%% interval [%+.1f, %+.1f]; final error %+.1f pp vs per_rank_bn\n",
                      row.bn_eval_from, static_cast<int>(Field(rec.measured, "swing_from_epoch")),
                      100 * Field(rec.measured, "swing_cut"),
                      100 * (Field(rec.measured, "swing_cut") - Field(rec.measured, "swing_cut_ci95")),
                      100 * (Field(rec.measured, "swing_cut") + Field(rec.measured, "swing_cut_ci95")),
                      100 * Field(rec.measured, "val_error_minus_per_rank_bn"));
          std::fflush(stdout);
        } else if (row.task == Task::kTinyImages) {
          // The counter-example: on TinyImages (under either protocol) the
          // damage is not significant: the interval of the difference
          // includes 0 (README: why the digits show it and these do not).
          rec.control = true;
          rec.verdict = std::fabs(g) <= ci ? results::Verdict::kControl : results::Verdict::kControlFailed;
        } else if (!small) {
          rec.control = true;
          rec.verdict = std::fabs(g) < kNoDamage ? results::Verdict::kControl : results::Verdict::kControlFailed;
        } else {
          rec.verdict = g - ci > 0 ? results::Verdict::kReproduced : results::Verdict::kNotReproduced;
        }
        if (row.variant == "precise_bn") {
          const double before = (Field(rec.measured, "rs_mean_err_before_precise") +
                                 Field(rec.measured, "rs_var_err_before_precise")) / 2;
          const double after = (Field(rec.measured, "rs_mean_err") + Field(rec.measured, "rs_var_err")) / 2;
          rec.measured["rs_err_shrink"] = before / after;
        }
      }
    } catch (const std::exception& e) {
      rec.verdict = results::Verdict::kError;
      rec.error = e.what();
    }
    records.push_back(rec);
  }
  return records;
}

}  // namespace ddp::small_batch_bn
