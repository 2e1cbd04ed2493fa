#include "repro/autograd_lost_gather/gradient_checks.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device_flag.h"
#include "core/harness/exchange.h"

namespace ddp::autograd_lost_gather {
namespace {

using results::Json;

struct SeedStats {
  double rel_error, scaled_error, residual, cosine, gap, max_abs, norm_ratio, true_norm, objective;
};

SeedStats Compare(const Vec& g, const Vec& truth, const Vec& predicted, int w, double objective) {
  SeedStats s{};
  const double tn = truth.norm();
  s.true_norm = tn;
  s.objective = objective;
  s.rel_error = (g - truth).norm() / tn;
  s.scaled_error = (static_cast<double>(w) * g - truth).norm() / tn;
  const double gn = g.norm();
  s.cosine = gn > 0 ? g.dot(truth) / (gn * tn) : 0.0;
  // The best scale c = g.g* / |g|^2, and what it leaves (computed directly:
  // sqrt(1 - cos^2) would lose half the digits when cos is near 1).
  const double c = gn > 0 ? g.dot(truth) / (gn * gn) : 0.0;
  s.residual = (c * g - truth).norm() / tn;
  s.gap = (g - predicted).norm() / tn;
  s.max_abs = g.size() ? g.cwiseAbs().maxCoeff() : 0.0;
  s.norm_ratio = gn / tn;
  return s;
}

Json GradWorld(comm::Comm& comm, const harness::CommonFlags& f, const PairFlags& p,
               const std::vector<VariantSpec>& variants) {
  const int w = comm.world_size();
  const auto dev = device::MakeDevice<double>(device::ResolveDeviceFlag(p.device, comm.backend()), device::kDeviceFlag);
  std::vector<GradStats> out;
  for (LossKind loss : kLosses) {
    for (Layout layout : p.layouts) {
      if (!LayoutRuns(layout, w, f.batch_size)) continue;
      const auto counts = Counts(layout, w, f.batch_size);
      const int64_t offset = Offsets(counts)[static_cast<std::size_t>(comm.rank())];
      for (const VariantSpec& v : variants) {
        if (!Runs(v, loss)) continue;
        std::vector<SeedStats> stats;
        Json copies;
        for (int k = 0; k < f.seeds; ++k) {
          const uint64_t seed = static_cast<uint64_t>(f.seed) + static_cast<uint64_t>(k);
          const Batch global = MakeBatch(seed, kGradCheckStream, Total(counts), p.problem.task);
          const Batch local = Slice(global, offset, counts[static_cast<std::size_t>(comm.rank())]);
          Encoder model(EncoderFor(loss, p.problem, seed));
          auto op = v.make_op();
          const device::CopyCount before = dev ? dev->copies() : device::CopyCount{};
          const Vec g = RankGrad(comm, model, local, loss, counts, *op, Scale(v, w), p.problem.tau, dev.get());
          if (dev && k == 0) copies = device::ToJson(dev->copies() - before);
          if (comm.rank() != 0) continue;
          // The one-process computations (rank 0 only; the model is unchanged).
          double objective = 0;
          const Vec truth = SerialGrad(model, global, loss, counts, KeyPaths::kAll, 1.0,
                                       p.problem.tau, &objective);
          const Vec predicted =
              SerialGrad(model, global, loss, counts, v.paths, Scale(v, w), p.problem.tau);
          stats.push_back(Compare(g, truth, predicted, w, objective));
        }
        if (comm.rank() != 0) continue;
        GradStats result;
        result.min_cosine = 1;  // a minimum over the seeds; the others are maxima
        for (const SeedStats& s : stats) {
          result.rel_error = std::max(result.rel_error, s.rel_error);
          result.scaled_error = std::max(result.scaled_error, s.scaled_error);
          result.best_scale_residual = std::max(result.best_scale_residual, s.residual);
          result.min_cosine = std::min(result.min_cosine, s.cosine);
          result.closed_form_gap = std::max(result.closed_form_gap, s.gap);
          result.max_abs_grad = std::max(result.max_abs_grad, s.max_abs);
        }
        result.norm_ratio = stats[0].norm_ratio;
        result.true_grad_norm = stats[0].true_norm;
        result.objective = stats[0].objective;
        result.device_copies = copies;
        out.push_back(result);
      }
    }
  }
  return harness::BroadcastFromRankZero(comm, Json(out));
}

}  // namespace

std::vector<GradCheck> RunGradChecks(const harness::CommonFlags& f, const PairFlags& p,
                                     const std::vector<VariantSpec>& variants) {
  std::vector<GradCheck> checks;
  for (int w : WorldSizes(f, p)) {
    std::fprintf(stderr, "autograd_lost_gather: gradient checks, W=%d, %d seeds...\n", w, f.seeds);
    const harness::WorldResult world = harness::RunWorld(
        f.World(w), [&](comm::Comm& comm) { return GradWorld(comm, f, p, variants); });
    std::size_t i = 0;
    for (LossKind loss : kLosses) {
      for (Layout layout : p.layouts) {
        if (!LayoutRuns(layout, w, f.batch_size)) continue;
        for (const VariantSpec& v : variants) {
          if (!Runs(v, loss)) continue;
          GradCheck c;
          c.variant = v.name;
          c.loss = loss;
          c.world_size = w;
          c.layout = layout;
          c.counts = Counts(layout, w, f.batch_size);
          c.seeds = f.seeds;
          c.first_seed = static_cast<uint64_t>(f.seed);
          c.scale_by_world = v.scale_by_world;
          c.device = device::ToString(device::ResolveDeviceFlag(p.device, f.backend));
          if (!world.ok) {
            c.error = world.failure;
          } else if (!world.value.is_array() || i >= world.value.size()) {
            c.error = "rank 0 returned fewer results than configurations";
          } else {
            GradStats& stats = c;  // its measured part
            stats = world.value[i++].get<GradStats>();
          }
          checks.push_back(c);
        }
      }
    }
  }
  return checks;
}

results::Record GradRecord(const GradCheck& c, const harness::CommonFlags& f) {
  results::Record r;
  r.bug = "autograd_lost_gather";
  r.variant = c.variant;
  r.backend = f.backend;
  r.world_size = c.world_size;
  r.config["experiment"] = "gradient";
  r.config["loss"] = Name(c.loss);
  r.config["batches"] = Name(c.layout);
  r.config["counts"] = CountsJson(c.counts);
  r.config["seeds"] = c.seeds;
  r.config["first_seed"] = static_cast<long long>(c.first_seed);
  r.config["loss_times_world_size"] = c.scale_by_world;
  r.config["device"] = c.device;
  if (!c.error.empty()) {
    r.verdict = results::Verdict::kError;
    r.error = c.error;
    return r;
  }
  r.measured["rel_error"] = c.rel_error;
  r.measured["norm_ratio"] = c.norm_ratio;
  r.measured["best_scale_residual"] = c.best_scale_residual;
  r.measured["scaled_error"] = c.scaled_error;
  r.measured["min_cosine"] = c.min_cosine;
  r.measured["closed_form_gap"] = c.closed_form_gap;
  r.measured["max_abs_grad"] = c.max_abs_grad;
  if (!c.device_copies.is_null()) r.measured["device_copies"] = c.device_copies;
  r.reference["grad_norm"] = c.true_grad_norm;
  r.reference["objective"] = c.objective;
  return r;
}

}  // namespace ddp::autograd_lost_gather
