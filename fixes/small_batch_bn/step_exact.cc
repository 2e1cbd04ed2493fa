#include "fixes/small_batch_bn/step_exact.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "core/data/torch_randperm.h"
#include "core/nn/sgd.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::small_batch_bn {
namespace {

using nn::Vector;
using results::Json;

std::span<const double> Span(const Vector<double>& v) { return {v.data(), static_cast<std::size_t>(v.size())}; }

// One model and its optimizer (what a rank or the reference trains).
struct Trainee {
  Model model;
  nn::Sgd<double> sgd;
  Trainee(Task task, NormKind norm, uint64_t seed, comm::Comm* comm, double lr, device::Placement placement,
          SyncBnTraffic* traffic = nullptr)
      : model(task, norm, seed, comm, 4, traffic, placement), sgd(model.Params(), {.lr = lr, .momentum = 0.9}) {}
};

// Teacher forcing: `to` starts the next step from `from`'s parameters,
// running statistics and momentum.
void CopyState(Trainee& from, Trainee& to) {
  nn::UnflattenValues(nn::FlattenValues(from.model.Params()), to.model.Params());
  nn::UnflattenBuffers(nn::FlattenBuffers(from.model.Buffers()), to.model.Buffers());
  to.sgd.LoadMomentum(from.sgd.FlattenMomentum());
}

// The batches of step s: the global batch is the next B indices of one
// permutation of the training images, cut into the ranks' batches in rank order.
struct Schedule {
  std::vector<int> sizes;
  std::vector<int64_t> perm;
  int global = 0;

  Schedule(std::vector<int> b, int64_t n, uint64_t seed) : sizes(std::move(b)) {
    global = std::accumulate(sizes.begin(), sizes.end(), 0);
    perm = data::TorchRandperm(n, static_cast<int64_t>(seed));
    if (global == 0) throw std::invalid_argument("step check: every rank's batch is empty");
  }
  // Rank r's indices at step s (wrapping around the permutation).
  std::vector<int64_t> Rank(int64_t s, int r) const {
    int64_t at = s * global + std::accumulate(sizes.begin(), sizes.begin() + r, 0);
    std::vector<int64_t> idx;
    for (int i = 0; i < sizes[r]; ++i) idx.push_back(perm[(at + i) % static_cast<int64_t>(perm.size())]);
    return idx;
  }
  std::vector<Images> All(const Images& data, int64_t s) const {
    std::vector<Images> out;
    for (int r = 0; r < static_cast<int>(sizes.size()); ++r) {
      const auto idx = Rank(s, r);
      out.push_back(Take(data, idx));
    }
    return out;
  }
};

// One DDP step of a SyncBN / GroupNorm model on this rank's batch. The loss
// weight W * b_r / B makes the averaged gradient the global batch's.
void DdpStep(comm::Comm& comm, Trainee& t, const Images& mine, int global) {
  nn::ZeroGrads(t.model.Params());
  if (t.model.kind() != NormKind::kGroupNorm) BroadcastBuffers(&comm, t.model);  // broadcast_buffers=True
  const double weight = static_cast<double>(comm.world_size()) * static_cast<double>(mine.size()) / global;
  ForwardBackward(t.model, mine, weight);
  AverageGradients(&comm, t.model);
  t.sgd.Step();
}

void OneProcessStep(Trainee& t, const Images& all) {
  nn::ZeroGrads(t.model.Params());
  ForwardBackward(t.model, all, 1.0);
  t.sgd.Step();
}

// One rank's result of the sync_bn / group_norm check.
struct SyncOrGroupRankResult {
  Json check;  // this rank's exact::StepCheck, as its ToJson()
  double trajectory_rel_err = -1;
  double trajectory_buffer_rel_err = -1;
  int64_t collectives_per_step = -1;  // the layers' (SyncBN), first step
  Json device_copies;  // first step (StepCopies), null on the host
  Json comm_staging;
};
DDP_JSON_FIELDS(SyncOrGroupRankResult, check, trajectory_rel_err, trajectory_buffer_rel_err,
                collectives_per_step, device_copies, comm_staging)

// One rank's result of the precise_bn check.
struct PreciseBnRankResult {
  Json check;  // this rank's exact::StepCheck, as its ToJson()
  double rs_err_before = -1;  // running-stat error before / after the last PreciseBN
  double rs_err_after = -1;
  Json device_copies;  // first training step (StepCopies), null on the host
  Json comm_staging;
};
DDP_JSON_FIELDS(PreciseBnRankResult, check, rs_err_before, rs_err_after, device_copies, comm_staging)

SyncOrGroupRankResult CheckSyncOrGroup(comm::Comm& comm, const StepExactConfig& c, const Images& train,
                                       const Schedule& sched) {
  const NormKind norm = c.fix == Fix::kSyncBn ? NormKind::kSyncBatchNorm : NormKind::kGroupNorm;
  SyncBnTraffic traffic;
  Trainee forced(Task::kDigits, norm, c.seed, &comm, c.lr, c.placement, &traffic);
  Trainee free(Task::kDigits, norm, c.seed, &comm, c.lr, c.placement);
  // SyncBN in one process = BatchNorm; always Eigen on the host.
  Trainee ref(Task::kDigits, norm, c.seed, nullptr, c.lr, device::Placement::kHost);
  exact::StepCheck check(exact::kDoubleTolerance);
  SyncOrGroupRankResult result;
  int64_t collectives_first_step = 0;
  for (int64_t s = 0; s < c.steps; ++s) {
    const std::vector<Images> parts = sched.All(train, s);
    const Images& mine = parts[comm.rank()];
    CopyState(ref, forced);
    const StepCopies copies(comm, forced.model);
    DdpStep(comm, forced, mine, sched.global);
    if (s == 0) {
      collectives_first_step = traffic.collectives;
      result.device_copies = copies.Layers();
      result.comm_staging = copies.Staging();
    }
    const Vector<double> ddp_grad = nn::FlattenGrads(forced.model.Params());
    OneProcessStep(ref, Concat(parts));
    check.Compare("grad", s, Span(ddp_grad), Span(nn::FlattenGrads(ref.model.Params())));
    check.Compare("param", s, Span(nn::FlattenValues(forced.model.Params())),
                  Span(nn::FlattenValues(ref.model.Params())));
    if (!ref.model.Buffers().empty()) {
      check.Compare("running_stats", s, Span(nn::FlattenBuffers(forced.model.Buffers())),
                    Span(nn::FlattenBuffers(ref.model.Buffers())));
    }
    DdpStep(comm, free, mine, sched.global);
  }
  result.check = check.ToJson();
  result.trajectory_rel_err = exact::NormwiseRelError(Span(nn::FlattenValues(free.model.Params())),
                                                      Span(nn::FlattenValues(ref.model.Params())));
  result.trajectory_buffer_rel_err = exact::NormwiseRelError(Span(nn::FlattenBuffers(free.model.Buffers())),
                                                             Span(nn::FlattenBuffers(ref.model.Buffers())));
  result.collectives_per_step = collectives_first_step;
  return result;
}

double RsErr(Model& m, const Images& data) {
  const auto [mean, var] = RunningStatError(m, data);
  return (mean + var) / 2;
}

PreciseBnRankResult CheckPreciseBn(comm::Comm& comm, const StepExactConfig& c, const Images& train,
                                   const Schedule& sched) {
  // The training: DDP with per-rank BatchNorm (the bug PreciseBN is applied to).
  Trainee ranks(Task::kDigits, NormKind::kBatchNorm, c.seed, &comm, c.lr, c.placement);
  Trainee ref(Task::kDigits, NormKind::kBatchNorm, c.seed, nullptr, c.lr, device::Placement::kHost);
  exact::StepCheck check(exact::kDoubleTolerance);
  PreciseBnRankResult result;
  double before = -1, after = -1;
  // PreciseBN's batches come after the training steps in the same permutation.
  const int64_t first_precise = c.steps;
  int most = c.precise_batches;  // batches drawn per step; rank r uses its first Count(r)
  if (!c.precise_counts.empty()) most = *std::max_element(c.precise_counts.begin(), c.precise_counts.end());
  const auto count = [&](int r) { return c.precise_counts.empty() ? c.precise_batches : c.precise_counts[r]; };
  for (int64_t s = 0; s < c.steps; ++s) {
    const Images mine = sched.All(train, s)[comm.rank()];
    const StepCopies copies(comm, ranks.model);
    nn::ZeroGrads(ranks.model.Params());
    BroadcastBuffers(&comm, ranks.model);
    // An empty rank has nothing to normalise (per-rank BN cannot run on no
    // samples): it joins the gradient average with zeros.
    if (mine.size() > 0) ForwardBackward(ranks.model, mine, 1.0);
    AverageGradients(&comm, ranks.model);
    ranks.sgd.Step();
    BroadcastBuffers(&comm, ranks.model);
    if (s == 0) {
      result.device_copies = copies.Layers();
      result.comm_staging = copies.Staging();
    }
    // PreciseBN over M batches per rank, from the same parameters everywhere.
    CopyState(ranks, ref);
    std::vector<Images> mine_precise, all_precise;
    for (int k = 0; k < count(comm.rank()); ++k) {
      std::vector<Images> parts = sched.All(train, first_precise + s * most + k);
      mine_precise.push_back(parts[comm.rank()]);
    }
    for (int r = 0; r < comm.world_size(); ++r) {
      for (int k = 0; k < count(r); ++k) {
        all_precise.push_back(sched.All(train, first_precise + s * most + k)[r]);
      }
    }
    // Training keeps its exponential averages; PreciseBN's result is judged
    // (and its effect measured) on the side.
    const Vector<double> ema = nn::FlattenBuffers(ranks.model.Buffers());
    if (s + 1 == c.steps) before = RsErr(ranks.model, train);
    PreciseBn(&comm, ranks.model, mine_precise);
    PreciseBn(nullptr, ref.model, all_precise);
    check.Compare("precise_running_stats", s, Span(nn::FlattenBuffers(ranks.model.Buffers())),
                  Span(nn::FlattenBuffers(ref.model.Buffers())));
    if (s + 1 == c.steps) after = RsErr(ranks.model, train);
    nn::UnflattenBuffers(ema, ranks.model.Buffers());
  }
  result.check = check.ToJson();
  result.rs_err_before = before;
  result.rs_err_after = after;
  return result;
}

// Rank 0's result; every rank's check is merged into `check`, and every
// rank's copies are appended to `out`.
template <typename RankResult>
RankResult ReadWorld(const harness::WorldResult& world, StepExactResult& out) {
  for (const Json& v : world.rank_values) {
    const RankResult r = v.get<RankResult>();
    out.check.Merge(exact::StepCheck::FromJson(r.check));
    if (!r.device_copies.is_null()) out.device_copies.push_back(r.device_copies);
    out.comm_staging.push_back(r.comm_staging);
  }
  return world.value.get<RankResult>();
}

}  // namespace

const char* ToString(Fix f) {
  switch (f) {
    case Fix::kSyncBn: return "sync_bn";
    case Fix::kGroupNorm: return "group_norm";
    case Fix::kPreciseBn: return "precise_bn";
  }
  return "?";
}

StepExactResult RunStepExact(const harness::CommonFlags& f, const StepExactConfig& c) {
  const int w = static_cast<int>(c.batches.size());
  if (w < 1) throw std::invalid_argument("step check: no ranks");
  const harness::WorldResult world = harness::RunWorld(f.World(w), [&](comm::Comm& comm) {
    TaskConfig task;
    task.noise = c.noise;
    task.seed = c.seed;
    const Images train = TrainImages(task, 0);
    const Schedule sched(c.batches, train.size(), c.seed);
    return c.fix == Fix::kPreciseBn ? Json(CheckPreciseBn(comm, c, train, sched))
                                    : Json(CheckSyncOrGroup(comm, c, train, sched));
  });
  if (!world.ok) throw std::runtime_error(world.failure);
  StepExactResult out;
  // Every rank judged its own step outputs; the verdict needs all of them.
  if (c.fix == Fix::kPreciseBn) {
    const PreciseBnRankResult v0 = ReadWorld<PreciseBnRankResult>(world, out);
    out.rs_err_before = v0.rs_err_before;
    out.rs_err_after = v0.rs_err_after;
  } else {
    const SyncOrGroupRankResult v0 = ReadWorld<SyncOrGroupRankResult>(world, out);
    out.trajectory_rel_err = v0.trajectory_rel_err;
    out.trajectory_buffer_rel_err = v0.trajectory_buffer_rel_err;
    out.collectives_per_step = v0.collectives_per_step;
  }
  return out;
}

}  // namespace ddp::small_batch_bn
