// SyncBatchNorm on W real ranks == one BatchNorm on the concatenated batch.
//
// For W in {1, 2, 3, 4} with uneven per-rank batches (a rank with 0 samples
// included), three training steps (fresh x and dy each), then one eval
// forward: outputs, input gradients, weight/bias gradients (summed over
// ranks, as DDP's averaging times W) and running statistics agree with the
// one-process BatchNorm to 1e-10 relative in double and 1e-5 in float
// (normwise: max|a - b| / max|ref| per tensor). Then the cases of PyTorch's
// tracker (issue 22192, PR 74944) by name.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/harness/world.h"
#include "core/nn/rng.h"
#include "core/testing/backend.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"
#include "gtest/gtest.h"

namespace ddp::small_batch_bn {
namespace {

using results::Json;

constexpr int kC = 4, kH = 3, kW = 2, kSteps = 3;

template <typename S>
double NormwiseError(const nn::Vector<S>& got, const nn::Vector<S>& ref) {
  if (ref.size() != got.size()) return INFINITY;
  if (ref.size() == 0) return 0;
  const double scale = std::max(static_cast<double>(ref.cwiseAbs().maxCoeff()), 1e-300);
  return static_cast<double>((got - ref).cwiseAbs().maxCoeff()) / scale;
}

template <typename S>
nn::Vector<S> Flat(const nn::Matrix<S>& m) {
  return Eigen::Map<const nn::Vector<S>>(m.data(), m.size());
}

// Samples [begin, begin + count) of t.
template <typename S>
nn::Vector<S> Slice(const nn::Tensor4<S>& t, int begin, int count) {
  const Eigen::Index per = static_cast<Eigen::Index>(t.c) * t.h * t.w;
  return t.data.segment(begin * per, count * per);
}

template <typename S>
nn::Tensor4<S> SliceTensor(const nn::Tensor4<S>& t, int begin, int count) {
  nn::Tensor4<S> out(count, t.c, t.h, t.w);
  out.data = Slice(t, begin, count);
  return out;
}

struct Case {
  std::vector<int> batches;  // per rank
  double mean_offset;        // added to every channel's mean (1e6: the cancellation case)
};

// The whole step's batch, the same on every rank (a function of seed and step).
template <typename S>
nn::Tensor4<S> GlobalBatch(int total, int step, double offset, uint64_t salt) {
  const double mean[kC] = {3, -2, 10, 0.5}, stdv[kC] = {2, 0.5, 5, 1};
  nn::Rng rng(1000 * salt + step);
  nn::Tensor4<S> x(total, kC, kH, kW);
  for (int n = 0; n < total; ++n) {
    for (int c = 0; c < kC; ++c) {
      for (int i = 0; i < kH * kW; ++i) x.Plane(n, c)[i] = static_cast<S>(offset + mean[c] + stdv[c] * rng.Normal());
    }
  }
  return x;
}

template <typename S>
void InitAffine(nn::BatchNorm<S>& bn) {
  nn::Rng rng(77);
  for (int c = 0; c < kC; ++c) {
    bn.weight().value(0, c) = static_cast<S>(rng.Uniform(0.5, 1.5));
    bn.bias().value(0, c) = static_cast<S>(rng.Uniform(-1, 1));
  }
}

// One case on one rank: the worst normwise error per quantity against the
// one-process BatchNorm, and the collectives and bytes SyncBN used.
struct CaseResult {
  double y = 0, dx = 0, dweight = 0, dbias = 0;  // training: outputs and gradients
  double running_mean = 0, running_var = 0;
  double eval_y = 0;
  double eval_collectives = 0, collectives_per_step = 0, bytes_received_per_step = 0;
};
DDP_JSON_FIELDS(CaseResult, y, dx, dweight, dbias, running_mean, running_var, eval_y,
                eval_collectives, collectives_per_step, bytes_received_per_step)

// The errors of `e` by quantity name (the outputs, the gradients, the
// running statistics, then the eval output).
std::vector<std::pair<std::string, double>> Errors(const CaseResult& e) {
  return {{"y", e.y},
          {"dx", e.dx},
          {"dweight", e.dweight},
          {"dbias", e.dbias},
          {"running_mean", e.running_mean},
          {"running_var", e.running_var},
          {"eval_y", e.eval_y}};
}

// Runs the case on this rank and the one-process reference.
template <typename S>
CaseResult RunCase(comm::Comm& comm, const Case& cs) {
  const int rank = comm.rank();
  const int total = std::accumulate(cs.batches.begin(), cs.batches.end(), 0);
  const int begin = std::accumulate(cs.batches.begin(), cs.batches.begin() + rank, 0);
  const int mine = cs.batches[rank];
  SyncBnTraffic traffic;
  nn::BatchNorm<S> sync(kC, {}, SyncBatchNormHooks<S>(comm, &traffic));
  nn::BatchNorm<S> ref(kC);
  InitAffine(sync);
  InitAffine(ref);
  CaseResult out;
  for (int step = 0; step < kSteps; ++step) {
    const nn::Tensor4<S> x = GlobalBatch<S>(total, step, cs.mean_offset, 1);
    const nn::Tensor4<S> dy = GlobalBatch<S>(total, step, 0, 2);
    sync.weight().ZeroGrad();
    sync.bias().ZeroGrad();
    ref.weight().ZeroGrad();
    ref.bias().ZeroGrad();
    const nn::Tensor4<S> y_ref = ref.Forward(x);
    const nn::Tensor4<S> dx_ref = ref.Backward(dy);
    const nn::Tensor4<S> y = sync.Forward(SliceTensor(x, begin, mine));
    const nn::Tensor4<S> dx = sync.Backward(SliceTensor(dy, begin, mine));
    out.y = std::max(out.y, NormwiseError<S>(y.data, Slice(y_ref, begin, mine)));
    out.dx = std::max(out.dx, NormwiseError<S>(dx.data, Slice(dx_ref, begin, mine)));
    // Parameter gradients: local sums, summed over ranks (DDP's all-reduce).
    std::vector<S> grads(2 * kC);
    Eigen::Map<nn::Vector<S>>(grads.data(), kC) = Flat<S>(sync.weight().grad);
    Eigen::Map<nn::Vector<S>>(grads.data() + kC, kC) = Flat<S>(sync.bias().grad);
    comm.Allreduce(std::span<S>(grads));
    out.dweight = std::max(out.dweight, NormwiseError<S>(Eigen::Map<nn::Vector<S>>(grads.data(), kC),
                                                         Flat<S>(ref.weight().grad)));
    out.dbias = std::max(out.dbias, NormwiseError<S>(Eigen::Map<nn::Vector<S>>(grads.data() + kC, kC),
                                                     Flat<S>(ref.bias().grad)));
    out.running_mean =
        std::max(out.running_mean, NormwiseError<S>(Flat<S>(sync.running_mean()), Flat<S>(ref.running_mean())));
    out.running_var =
        std::max(out.running_var, NormwiseError<S>(Flat<S>(sync.running_var()), Flat<S>(ref.running_var())));
  }
  // Eval uses the running statistics: same outputs without communication.
  sync.SetTraining(false);
  ref.SetTraining(false);
  const nn::Tensor4<S> x = GlobalBatch<S>(total, kSteps, cs.mean_offset, 1);
  const int64_t before = comm.next_seq();
  out.eval_y = NormwiseError<S>(sync.Forward(SliceTensor(x, begin, mine)).data, Slice(ref.Forward(x), begin, mine));
  out.eval_collectives = static_cast<double>(comm.next_seq() - before);
  out.collectives_per_step = static_cast<double>(traffic.collectives) / kSteps;
  out.bytes_received_per_step = static_cast<double>(traffic.bytes_received) / kSteps;
  return out;
}

// One case in both precisions.
struct BothPrecisions {
  CaseResult f64;
  CaseResult f32;
};
DDP_JSON_FIELDS(BothPrecisions, f64, f32)

std::vector<Case> CasesFor(int w) {
  switch (w) {
    case 1: return {{{5}, 0}};
    case 2: return {{{3, 1}, 0}, {{1, 6}, 0}};
    case 3: return {{{4, 0, 2}, 0}, {{0, 0, 3}, 0}};
    default: return {{{1, 3, 0, 5}, 0}, {{2, 2, 2, 2}, 0}};
  }
}

harness::WorldOptions World(int w) {
  harness::WorldOptions o;
  o.world_size = w;
  o.backend = testing::TestBackend();
  o.timeout_s = 20;
  return o;
}

// Where NCCL ranks share a GPU each world costs seconds (core/testing/
// README.md): there the exactness runs at W = 4 only (uneven batches, an
// empty rank), and PR 74944 at W = 3 only (two empty ranks).
constexpr char kSharedGpuCut[] =
    "W = 4 only for the exactness (not 1, 2, 3); PR 74944 at W = 3 only (not 2 and 3)";

class SyncBatchNormExact : public ::testing::TestWithParam<int> {};

TEST_P(SyncBatchNormExact, EqualsOneProcessOnConcatenatedBatch) {
  DDP_REQUIRE_BACKEND();
  if (GetParam() != 4) {
    DDP_SKIP_IF_SHARED_GPU(4, kSharedGpuCut);
  }
  const int w = GetParam();
  const std::vector<Case> cases = CasesFor(w);
  const auto world = harness::RunWorld(World(w), [&](comm::Comm& comm) {
    std::vector<BothPrecisions> out;
    for (const Case& cs : cases) out.push_back({RunCase<double>(comm, cs), RunCase<float>(comm, cs)});
    return Json(out);
  });
  ASSERT_TRUE(world.ok) << world.failure;
  ASSERT_EQ(world.rank_values.size(), static_cast<size_t>(w));
  for (int r = 0; r < w; ++r) {
    const auto rank_cases = world.rank_values[r].get<std::vector<BothPrecisions>>();
    ASSERT_EQ(rank_cases.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      for (const char* type : {"f64", "f32"}) {
        const bool f64 = std::string(type) == "f64";
        const double tol = f64 ? 1e-10 : 1e-5;
        const CaseResult& e = f64 ? rank_cases[i].f64 : rank_cases[i].f32;
        for (const auto& [q, err] : Errors(e)) {
          EXPECT_LE(err, tol) << type << " " << q << " rank " << r << " case " << i;
          RecordProperty(std::string(type) + "_" + q + "_w" + std::to_string(w) + "_r" + std::to_string(r) + "_c" +
                             std::to_string(i),
                         std::to_string(err));
        }
        // One all-gather forward, one all-reduce backward; eval: none.
        EXPECT_EQ(e.collectives_per_step, 2.0);
        EXPECT_EQ(e.eval_collectives, 0.0);
        const double bytes = (w * (2 * kC + 1) + 2 * kC) * (f64 ? 8.0 : 4.0);
        EXPECT_EQ(e.bytes_received_per_step, bytes);
      }
    }
  }
  std::printf("W=%d: rank 0 case 0 f64 errors %s\n", w,
              Dump(Json(world.rank_values[0].get<std::vector<BothPrecisions>>()[0].f64)).c_str());
}

INSTANTIATE_TEST_SUITE_P(Worlds, SyncBatchNormExact, ::testing::Values(1, 2, 3, 4));

// The large-means case on one rank: ours, and the rejected design's variance.
struct LargeMeansResult {
  CaseResult ours;
  double raw_sums_var_rel_error = 0;  // one all-reduce of (n, sum x, sum x^2)
};
DDP_JSON_FIELDS(LargeMeansResult, ours, raw_sums_var_rel_error)

// Numerical soundness: channel means of 1e6 with std ~1. Merging (count, mean,
// M2) stays exact; one all-reduce of fused raw sums (count, sum x, sum x^2) —
// the cheaper design — loses the variance to cancellation.
TEST(SyncBatchNormNumerics, LargeMeansMergeExactlyRawSumsDoNot) {
  DDP_REQUIRE_BACKEND();
  const Case cs{{3, 0, 5}, 1e6};
  const auto world = harness::RunWorld(World(3), [&](comm::Comm& comm) {
    LargeMeansResult out;
    out.ours = RunCase<double>(comm, cs);
    // The rejected design, through the same engine: all-reduce (n, sum, sum x^2).
    const int begin = std::accumulate(cs.batches.begin(), cs.batches.begin() + comm.rank(), 0);
    const nn::Tensor4<double> x = GlobalBatch<double>(8, 0, cs.mean_offset, 1);
    const nn::Tensor4<double> part = SliceTensor(x, begin, cs.batches[comm.rank()]);
    std::vector<double> sums(1 + 2 * kC, 0.0);
    sums[0] = static_cast<double>(part.n) * kH * kW;
    for (int n = 0; n < part.n; ++n) {
      for (int c = 0; c < kC; ++c) {
        for (int i = 0; i < kH * kW; ++i) {
          sums[1 + c] += part.Plane(n, c)[i];
          sums[1 + kC + c] += part.Plane(n, c)[i] * part.Plane(n, c)[i];
        }
      }
    }
    comm.Allreduce(std::span<double>(sums));
    const nn::ChannelStats<double> exact = nn::ComputeChannelStats(x);
    double worst = 0;
    for (int c = 0; c < kC; ++c) {
      const double var_raw = (sums[1 + kC + c] - sums[1 + c] * sums[1 + c] / sums[0]) / sums[0];
      const double var_ref = exact.m2[c] / static_cast<double>(exact.count);
      worst = std::max(worst, std::fabs(var_raw - var_ref) / var_ref);
    }
    out.raw_sums_var_rel_error = worst;
    return Json(out);
  });
  ASSERT_TRUE(world.ok) << world.failure;
  for (const Json& j : world.rank_values) {
    const LargeMeansResult e = j.get<LargeMeansResult>();
    // The statistics themselves stay exact to 1e-10. Outputs and gradients go
    // through x - mean with |x| ~ 1e6 and std ~ 1: the inputs' own rounding
    // (1e6 x 2^-53 ~ 1e-10) is amplified by 1e6 relative to the result, so
    // any implementation, the one-process one included, is only determined
    // to ~1e-10..1e-9 there; 1e-8 is that conditioning bound with margin.
    for (const auto& [q, err] : Errors(e.ours)) {
      const bool stats = q == "running_mean" || q == "running_var";
      EXPECT_LE(err, stats ? 1e-10 : 1e-8) << q;
    }
    EXPECT_GT(e.raw_sums_var_rel_error, 1e-4)
        << "expected fused raw sums to lose the variance at mean 1e6";
  }
  std::printf("mean 1e6: SyncBN errors %s\n", Dump(world.rank_values[0]).c_str());
}

// The 22192 case on one rank: ours, and that weighting's running_var.
struct Issue22192Result {
  CaseResult ours;
  std::vector<double> rv_bug;  // per channel, under 22192's weighting
  double issue22192_running_var_rel_error = 0;
};
DDP_JSON_FIELDS(Issue22192Result, ours, rv_bug, issue22192_running_var_rel_error)

// PyTorch's tracker, issue 22192 (PyTorch 1.1): with different per-rank
// batch sizes, SyncBatchNorm's gather of statistics used this rank's own
// count for every rank, so the merged variance weighed the ranks as if they
// held equal counts and the running_var differed from rank to rank. Ours
// sends each rank's count: per-rank batches 2 and 6, and every rank's
// running_var equals the one-process BatchNorm's on the 8 samples. The
// 22192 formula, applied to the same gathered statistics, is shown off (and
// rank-dependent) so the case can tell the two apart.
TEST(SyncBatchNormTrackerCases, Issue22192RunningVarWithDifferentPerRankBatchSizes) {
  DDP_REQUIRE_BACKEND();
  const Case cs{{2, 6}, 0};
  const auto world = harness::RunWorld(World(2), [&](comm::Comm& comm) {
    Issue22192Result out;
    out.ours = RunCase<double>(comm, cs);
    // One step of a fresh layer: ours, and the 22192 weighting of the same parts.
    const int rank = comm.rank();
    const int begin = std::accumulate(cs.batches.begin(), cs.batches.begin() + rank, 0);
    const nn::Tensor4<double> x = GlobalBatch<double>(8, 0, cs.mean_offset, 1);
    const nn::Tensor4<double> part = SliceTensor(x, begin, cs.batches[rank]);
    nn::ChannelStats<double> local = nn::ComputeChannelStats(part);
    std::vector<nn::ChannelStats<double>> parts = AllgatherChannelStats(comm, local);
    for (auto& p : parts) {  // every rank's (mean, var) weighed with this rank's count
      p.m2 *= static_cast<double>(local.count) / static_cast<double>(p.count);
      p.count = local.count;
    }
    const nn::ChannelStats<double> bug = nn::MergeChannelStats<double>(parts);
    nn::BatchNorm<double> ref(kC);
    ref.Forward(x);
    double worst = 0;
    for (int c = 0; c < kC; ++c) {
      const double rv_bug = 0.9 + 0.1 * bug.m2[c] / static_cast<double>(bug.count - 1);
      worst = std::max(worst, std::fabs(rv_bug - ref.running_var()(0, c)) / ref.running_var()(0, c));
      out.rv_bug.push_back(rv_bug);
    }
    out.issue22192_running_var_rel_error = worst;
    return Json(out);
  });
  ASSERT_TRUE(world.ok) << world.failure;
  std::vector<Issue22192Result> ranks;
  for (const Json& j : world.rank_values) ranks.push_back(j.get<Issue22192Result>());
  for (const Issue22192Result& e : ranks) {
    for (const auto& [q, err] : Errors(e.ours)) EXPECT_LE(err, 1e-10) << q;
    EXPECT_GT(e.issue22192_running_var_rel_error, 1e-3);
  }
  // 22192's symptom: the ranks' running_var disagree under its weighting.
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_NE(ranks[0].rv_bug.at(0), ranks[1].rv_bug.at(0));
  std::printf("22192 (batches 2, 6): ours %s\n", Dump(world.rank_values[0]).c_str());
}

// PyTorch's tracker, PR 74944 (issue 36530): a rank whose batch is empty
// crashed SyncBatchNorm's statistics kernel. Ours: the empty rank joins both
// collectives with count 0; forward, backward, running statistics and eval
// equal one process on the others' samples (W = 2: batches 0 and 5; W = 3:
// 0, 0 and 3).
TEST(SyncBatchNormTrackerCases, Pr74944ARankWithAnEmptyBatch) {
  DDP_REQUIRE_BACKEND();
  using WorldCase = std::pair<int, Case>;
  const std::vector<WorldCase> worlds = testing::PickSizes(
      3, std::vector<WorldCase>{{2, {{0, 5}, 0}}, {3, {{0, 0, 3}, 0}}},
      std::vector<WorldCase>{{3, {{0, 0, 3}, 0}}}, kSharedGpuCut);
  for (const auto& [w, cs] : worlds) {
    const auto world =
        harness::RunWorld(World(w), [&](comm::Comm& comm) { return Json(RunCase<double>(comm, cs)); });
    ASSERT_TRUE(world.ok) << world.failure;
    for (const Json& j : world.rank_values) {
      const CaseResult e = j.get<CaseResult>();
      for (const auto& [q, err] : Errors(e)) EXPECT_LE(err, 1e-10) << "W=" << w << " " << q;
      EXPECT_EQ(e.collectives_per_step, 2.0) << "the empty rank joins both";
    }
  }
}

}  // namespace
}  // namespace ddp::small_batch_bn
