#include "repro/autograd_lost_gather/training_runs.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device_flag.h"
#include "core/exact/step_check.h"
#include "core/harness/exchange.h"
#include "core/nn/sgd.h"

namespace ddp::autograd_lost_gather {
namespace {

using results::Json;

constexpr double kMomentum = 0.9;

double Distance(Encoder& a, Encoder& b) {
  return (nn::FlattenValues(a.Params()) - nn::FlattenValues(b.Params())).norm();
}

std::span<const double> Span(const Vec& v) {
  return std::span<const double>(v.data(), static_cast<std::size_t>(v.size()));
}

// One training configuration of a world: batch layout and length.
struct TrainCase {
  int batch_size = 0;
  Layout layout = Layout::kEven;
  int steps = 0;
  bool grid = false;
};

std::vector<int> CurveWorlds(const harness::CommonFlags& f, const PairFlags& p) {
  return p.sweep && !p.curve_worlds.empty() ? p.curve_worlds : WorldSizes(f, p);
}

std::vector<TrainCase> TrainCases(const harness::CommonFlags& f, const PairFlags& p, int w) {
  std::vector<TrainCase> cases;
  const std::vector<int> main = CurveWorlds(f, p);
  if (p.steps > 0 && std::count(main.begin(), main.end(), w) &&
      LayoutRuns(Layout::kEven, w, f.batch_size)) {
    cases.push_back({f.batch_size, Layout::kEven, p.steps, false});
  }
  if (p.grid_steps <= 0) return cases;
  for (const GridCell& cell : p.grid) {
    if (cell.world_size != w) continue;
    for (Layout layout : p.layouts) {
      if (LayoutRuns(layout, w, cell.batch_size)) {
        cases.push_back({cell.batch_size, layout, p.grid_steps, true});
      }
    }
  }
  return cases;
}

std::vector<int> TrainWorlds(const harness::CommonFlags& f, const PairFlags& p) {
  std::vector<int> worlds = p.steps > 0 ? CurveWorlds(f, p) : std::vector<int>{};
  if (p.grid_steps > 0) {
    for (const GridCell& cell : p.grid) worlds.push_back(cell.world_size);
  }
  std::sort(worlds.begin(), worlds.end());
  worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
  return worlds;
}

// One process, W simulated only through the gradient formula (true
// gradient: paths kAll, scale 1), free-running from the initial model.
// Returns the curve at the checkpoints when `held_out` is given.
std::vector<CurvePoint> SerialTrain(Encoder& model, LossKind loss, const PairFlags& p,
                                    const harness::CommonFlags& f,
                                    const std::vector<int64_t>& counts, int steps,
                                    const Batch* held_out) {
  nn::Sgd<double> sgd(model.Params(), {.lr = p.lr, .momentum = kMomentum, .weight_decay = 0});
  const auto checkpoints = Checkpoints(steps);
  std::vector<CurvePoint> curve;
  for (int t = 0; t <= steps; ++t) {
    if (held_out && std::count(checkpoints.begin(), checkpoints.end(), t)) {
      const Evaluation e = Evaluate(model, *held_out, loss, p.problem.tau);
      curve.push_back({t, e.loss, e.accuracy});
    }
    if (t == steps) break;
    const Batch global = MakeBatch(static_cast<uint64_t>(f.seed), static_cast<uint64_t>(t),
                                   Total(counts), p.problem.task);
    SerialGrad(model, global, loss, counts, KeyPaths::kAll, 1.0, p.problem.tau);
    sgd.Step();
  }
  return curve;
}

// Rank 0's judge of each training step (teacher forcing): a one-process
// model that adopts rank 0's parameters and momentum before the step, then
// takes the variant's predicted step and the true-gradient step from there.
class StepJudge {
 public:
  StepJudge(LossKind loss, const VariantSpec& v, const PairFlags& p, uint64_t seed,
            std::vector<int64_t> counts)
      : loss_(loss),
        paths_(v.paths),
        scale_(Scale(v, static_cast<int>(counts.size()))),
        tau_(p.problem.tau),
        counts_(std::move(counts)),
        model_(EncoderFor(loss, p.problem, seed)),
        sgd_(model_.Params(), {.lr = p.lr, .momentum = kMomentum, .weight_decay = 0}) {}

  void Before(Encoder& rank_model, const nn::Sgd<double>& rank_sgd) {
    params_ = nn::FlattenValues(rank_model.Params());
    momentum_ = rank_sgd.FlattenMomentum();
  }

  // `g`: the averaged gradient the engine produced; rank_model/sgd: after the step.
  void After(int step, const Batch& global, const Vec& g, Encoder& rank_model,
             const nn::Sgd<double>& rank_sgd) {
    nn::UnflattenValues(params_, model_.Params());
    sgd_.LoadMomentum(momentum_);
    const bool predicted_is_truth = paths_ == KeyPaths::kAll && scale_ == 1.0;
    if (!predicted_is_truth) {
      const Vec predicted = SerialGrad(model_, global, loss_, counts_, paths_, scale_, tau_);
      closed_form_.Compare("grad", step, Span(g), Span(predicted));
    }
    // Last, so that the model's gradients are g* for the SGD step below.
    const Vec truth = SerialGrad(model_, global, loss_, counts_, KeyPaths::kAll, 1.0, tau_);
    if (predicted_is_truth) closed_form_.Compare("grad", step, Span(g), Span(truth));
    truth_.Compare("grad", step, Span(g), Span(truth));
    sgd_.Step();
    truth_.Compare("param", step, Span(nn::FlattenValues(rank_model.Params())),
                   Span(nn::FlattenValues(model_.Params())));
    truth_.Compare("momentum", step, Span(rank_sgd.FlattenMomentum()),
                   Span(sgd_.FlattenMomentum()));
  }

  const exact::StepCheck& truth() const { return truth_; }
  const exact::StepCheck& closed_form() const { return closed_form_; }

 private:
  LossKind loss_;
  KeyPaths paths_;
  double scale_;
  double tau_;
  std::vector<int64_t> counts_;
  Encoder model_;
  nn::Sgd<double> sgd_;
  Vec params_, momentum_;
  exact::StepCheck truth_{exact::kDoubleTolerance};
  exact::StepCheck closed_form_{exact::kDoubleTolerance};
};

Json TrainWorld(comm::Comm& comm, const harness::CommonFlags& f, const PairFlags& p,
                const std::vector<VariantSpec>& variants, const std::vector<TrainCase>& cases) {
  const int w = comm.world_size();
  const uint64_t seed = static_cast<uint64_t>(f.seed);
  const Batch held_out = MakeBatch(seed, kHeldOutStream, f.n, p.problem.task);
  const auto dev = device::MakeDevice<double>(device::ResolveDeviceFlag(p.device, comm.backend()), device::kDeviceFlag);
  std::vector<TrainResult> out;
  for (const TrainCase& tc : cases) {
    const auto counts = Counts(tc.layout, w, tc.batch_size);
    const int64_t offset = Offsets(counts)[static_cast<std::size_t>(comm.rank())];
    const auto checkpoints = Checkpoints(tc.steps);
    for (LossKind loss : kLosses) {
      // The free-running true-gradient run (rank 0; once per case and loss).
      std::unique_ptr<Encoder> true_model;
      std::vector<CurvePoint> true_curve;
      for (const VariantSpec& v : variants) {
        if (!Runs(v, loss)) continue;
        Encoder model(EncoderFor(loss, p.problem, seed));
        Encoder initial(EncoderFor(loss, p.problem, seed));
        nn::Sgd<double> sgd(model.Params(), {.lr = p.lr, .momentum = kMomentum, .weight_decay = 0});
        auto op = v.make_op();
        std::unique_ptr<StepJudge> judge;
        if (comm.rank() == 0) judge = std::make_unique<StepJudge>(loss, v, p, seed, counts);
        std::vector<CurvePoint> curve;
        Json copies;
        for (int t = 0; t <= tc.steps; ++t) {
          if (comm.rank() == 0 && !tc.grid && std::count(checkpoints.begin(), checkpoints.end(), t)) {
            const Evaluation e = Evaluate(model, held_out, loss, p.problem.tau);
            curve.push_back({t, e.loss, e.accuracy});
          }
          if (t == tc.steps) break;
          const Batch global = MakeBatch(seed, static_cast<uint64_t>(t), Total(counts), p.problem.task);
          const Batch local = Slice(global, offset, counts[static_cast<std::size_t>(comm.rank())]);
          if (judge) judge->Before(model, sgd);
          const device::CopyCount before = dev ? dev->copies() : device::CopyCount{};
          const Vec g = RankGrad(comm, model, local, loss, counts, *op, Scale(v, w), p.problem.tau, dev.get());
          if (dev && t == 0) copies = device::ToJson(dev->copies() - before);
          sgd.Step();
          if (judge) judge->After(t, global, g, model, sgd);
        }
        if (comm.rank() != 0) continue;
        if (!true_model) {
          true_model = std::make_unique<Encoder>(EncoderFor(loss, p.problem, seed));
          true_curve = SerialTrain(*true_model, loss, p, f, counts, tc.steps,
                                   tc.grid ? nullptr : &held_out);
        }
        const double truth_norm = nn::FlattenValues(true_model->Params()).norm();
        TrainResult result;
        result.curve = std::move(curve);
        result.reference = true_curve;
        result.step_check = judge->truth().ToJson();
        result.closed_form_gap = judge->closed_form().worst("grad");
        result.deviation = Distance(model, *true_model) / truth_norm;
        result.device_copies = copies;
        result.param_change =
            Distance(model, initial) / nn::FlattenValues(initial.Params()).norm();
        out.push_back(result);
      }
    }
  }
  return harness::BroadcastFromRankZero(comm, Json(out));
}

}  // namespace

std::vector<int> Checkpoints(int steps) {
  std::vector<int> out;
  for (int s : {0, 10, 25, 50, 100}) {
    if (s <= steps) out.push_back(s);
  }
  for (int s = 200; s <= steps; s += 100) out.push_back(s);
  if (out.empty() || out.back() != steps) out.push_back(steps);
  return out;
}

std::vector<TrainRun> RunTraining(const harness::CommonFlags& f, const PairFlags& p,
                                  const std::vector<VariantSpec>& variants) {
  std::vector<TrainRun> runs;
  for (int w : TrainWorlds(f, p)) {
    // One world per configuration: a world's deadline (a backstop for a rank
    // stuck outside any collective; each collective has its own deadline)
    // then grows with that configuration's steps only.
    for (const TrainCase& tc : TrainCases(f, p, w)) {
      std::fprintf(stderr, "autograd_lost_gather: training, W=%d, %s batches of %d rows, %d "
                   "steps...\n", w, Name(tc.layout), tc.batch_size, tc.steps);
      int trainings = 0;
      for (LossKind loss : kLosses) {
        for (const VariantSpec& v : variants) trainings += Runs(v, loss);
      }
      harness::WorldOptions wo = f.World(w);
      wo.world_deadline_s = 4 * f.timeout + 10 + 1.0 * tc.steps * trainings;
      const harness::WorldResult world = harness::RunWorld(
          wo, [&](comm::Comm& comm) { return TrainWorld(comm, f, p, variants, {tc}); });
      std::size_t i = 0;
      for (LossKind loss : kLosses) {
        for (const VariantSpec& v : variants) {
          if (!Runs(v, loss)) continue;
          TrainRun t;
          t.variant = v.name;
          t.loss = loss;
          t.world_size = w;
          t.batch_size = tc.batch_size;
          t.layout = tc.layout;
          t.counts = Counts(tc.layout, w, tc.batch_size);
          t.steps = tc.steps;
          t.grid = tc.grid;
          if (!world.ok) {
            t.error = world.failure;
          } else if (!world.value.is_array() || i >= world.value.size()) {
            t.error = "rank 0 returned fewer results than configurations";
          } else {
            TrainResult& result = t;  // its measured part
            result = world.value[i++].get<TrainResult>();
            t.grad_rel_err = exact::StepCheck::FromJson(t.step_check).worst("grad");
          }
          runs.push_back(t);
        }
      }
    }
  }
  return runs;
}

results::Record TrainRecord(const TrainRun& t, const harness::CommonFlags& f, const PairFlags& p) {
  results::Record r;
  r.bug = "autograd_lost_gather";
  r.variant = t.variant;
  r.backend = f.backend;
  r.world_size = t.world_size;
  r.config["experiment"] = "training";
  r.config["loss"] = Name(t.loss);
  r.config["batches"] = Name(t.layout);
  r.config["batch_size"] = t.batch_size;
  r.config["counts"] = CountsJson(t.counts);
  r.config["steps"] = t.steps;
  r.config["grid"] = t.grid;
  r.config["lr"] = p.lr;
  r.config["momentum"] = kMomentum;
  r.config["held_out"] = static_cast<long long>(f.n);
  r.config["seed"] = static_cast<long long>(f.seed);
  r.config["device"] = device::ToString(device::ResolveDeviceFlag(p.device, f.backend));
  r.reference["tolerance"] = exact::kDoubleTolerance;
  if (!t.error.empty()) {
    r.verdict = results::Verdict::kError;
    r.error = t.error;
    return r;
  }
  r.measured["grad_rel_err"] = t.grad_rel_err;
  r.measured["closed_form_gap"] = t.closed_form_gap;
  r.measured["trajectory_rel_err"] = t.deviation;
  r.measured["param_change"] = t.param_change;
  r.measured["step_check"] = t.step_check;
  if (!t.device_copies.is_null()) r.measured["device_copies"] = t.device_copies;
  if (!t.grid) {
    r.measured["final_loss"] = t.curve.back().loss;
    r.measured["final_accuracy"] = t.curve.back().accuracy;
    r.measured["curve"] = t.curve;
    r.reference["final_loss"] = t.reference.back().loss;
    r.reference["final_accuracy"] = t.reference.back().accuracy;
    r.reference["curve"] = t.reference;
    r.reference["accuracy_metric"] = t.loss == LossKind::kGlobal ? "roc_auc" : "top1_retrieval";
  }
  return r;
}

}  // namespace ddp::autograd_lost_gather
