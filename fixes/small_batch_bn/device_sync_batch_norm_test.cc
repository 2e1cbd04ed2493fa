// SyncBatchNorm on a device (core/device's DeviceBatchNorm with
// SyncBatchNormDeviceHooks: the all-gather and the all-reduce on device
// buffers) on W real ranks == core/nn's BatchNorm on the concatenated batch in
// one process, judged per step (exact::StepCheck): three training steps with
// fresh x and dy and the parameters moved between them, then an eval step;
// outputs, input gradients, parameter gradients (summed over ranks, as DDP's
// average times W) and running statistics, within the device tolerance of
// float and double (core/device/device_tolerance.h). W in {1, 2, 4}, uneven
// batches and empty ranks. Also the copies each rank makes per training step
// for this known shape, and the collectives.
//
// The device: on Gloo the emulated one (the kernels' arithmetic on the host,
// real processes and a real engine); in the _nccl twin the GPU.
#include <numeric>
#include <string>
#include <vector>

#include "core/device/device_tolerance.h"
#include "core/device/make_device.h"
#include "core/exact/step_check.h"
#include "core/harness/world.h"
#include "core/nn/rng.h"
#include "core/testing/backend.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"
#include "gtest/gtest.h"

namespace ddp::small_batch_bn {
namespace {

using results::Json;

constexpr int kC = 4, kH = 3, kW = 2;
constexpr int kTrainSteps = 3;

device::Placement TestPlacement() {
  return testing::TestBackend() == "nccl" ? device::Placement::kCuda : device::Placement::kEmulated;
}

// Step s's whole batch (the same on every rank): channel c around 2 c - 3.
template <typename S>
nn::Tensor4<S> Batch(int total, int step, bool gradient) {
  nn::Rng rng(100 * step + (gradient ? 1 : 0));
  nn::Tensor4<S> t(total, kC, kH, kW);
  for (int64_t i = 0; i < t.Size(); ++i) {
    const int c = static_cast<int>(i / (kH * kW)) % kC;
    t.data[i] = static_cast<S>(gradient ? rng.Normal() : rng.Normal(2.0 * c - 3, 0.5 + c));
  }
  return t;
}

template <typename S>
nn::Tensor4<S> Rows(const nn::Tensor4<S>& t, int begin, int count) {
  nn::Tensor4<S> out(count, t.c, t.h, t.w);
  const int64_t per = int64_t{t.c} * t.h * t.w;
  out.data = t.data.segment(begin * per, count * per);
  return out;
}

template <typename S>
std::span<const S> Span(const nn::Vector<S>& v) {
  return {v.data(), static_cast<std::size_t>(v.size())};
}

struct RankResult {
  Json f64, f32;                    // exact::StepCheck::ToJson per scalar type
  std::vector<double> copy_counts;  // Flat() of training step 0's copies (double)
  double collectives_per_step = 0, eval_collectives = 0;
};
DDP_JSON_FIELDS(RankResult, f64, f32, copy_counts, collectives_per_step, eval_collectives)

// The counts the test asserts, flat: activation h2d calls, bytes; d2h calls,
// bytes; parameter h2d, d2h; statistic d2h; statistic h2d.
std::vector<double> Flat(const device::CopyCount& k) {
  std::vector<double> out;
  const auto add = [&](const device::CopyTally& t) {
    out.push_back(static_cast<double>(t.calls));
    out.push_back(static_cast<double>(t.bytes));
  };
  using device::CopyKind;
  add(k.h2d[static_cast<int>(CopyKind::kActivation)]);
  add(k.d2h[static_cast<int>(CopyKind::kActivation)]);
  add(k.h2d[static_cast<int>(CopyKind::kParameter)]);
  add(k.d2h[static_cast<int>(CopyKind::kParameter)]);
  add(k.d2h[static_cast<int>(CopyKind::kStatistic)]);
  add(k.h2d[static_cast<int>(CopyKind::kStatistic)]);
  return out;
}

// Runs the steps on this rank and the one-process reference; returns the
// per-step check (and, through the out-parameters, the step-0 copies and
// the collectives).
template <typename S>
exact::StepCheck RunSteps(comm::Comm& comm, const std::vector<int>& batches, device::CopyCount* step0,
                          SyncBnTraffic* traffic, int64_t* eval_collectives) {
  const int total = std::accumulate(batches.begin(), batches.end(), 0);
  const int begin = std::accumulate(batches.begin(), batches.begin() + comm.rank(), 0);
  const int mine = batches[comm.rank()];
  const auto dev = device::MakeDevice<S>(TestPlacement());
  device::DeviceBatchNorm<S> sync(dev.get(), kC, {}, SyncBatchNormDeviceHooks<S>(comm, traffic));
  nn::BatchNorm<S> ref(kC);
  exact::StepCheck check(device::StepTolerance<S>());
  for (int step = 0; step <= kTrainSteps; ++step) {
    const bool training = step < kTrainSteps;
    sync.SetTraining(training);
    ref.SetTraining(training);
    nn::ZeroGrads(sync.Params());
    nn::ZeroGrads(ref.Params());
    const nn::Tensor4<S> x = Batch<S>(total, step, false), dy = Batch<S>(total, step, true);
    const device::CopyCount before = dev->copies();
    const int64_t seq = comm.next_seq();
    const nn::Tensor4<S> y = sync.Forward(Rows(x, begin, mine));
    const nn::Tensor4<S> dx = sync.Backward(Rows(dy, begin, mine));
    if (step == 0) *step0 = dev->copies() - before;
    if (!training) *eval_collectives = comm.next_seq() - seq;
    const nn::Tensor4<S> y_ref = ref.Forward(x);
    const nn::Tensor4<S> dx_ref = ref.Backward(dy);
    check.Compare("y", step, Span<S>(y.data), Span<S>(Rows(y_ref, begin, mine).data));
    check.Compare("dx", step, Span<S>(dx.data), Span<S>(Rows(dx_ref, begin, mine).data));
    // Parameter gradients: the local sums, summed over ranks (DDP's all-reduce).
    nn::Vector<S> grads = nn::FlattenGrads(sync.Params());
    comm.Allreduce(std::span<S>(grads.data(), grads.size()));
    check.Compare("param_grad", step, Span<S>(grads), Span<S>(nn::FlattenGrads(ref.Params())));
    check.Compare("running_stats", step, Span<S>(nn::FlattenBuffers(sync.Buffers())),
                  Span<S>(nn::FlattenBuffers(ref.Buffers())));
    // The same optimizer step on both sides: the next Forward uploads new gamma, beta.
    nn::UnflattenValues(nn::Vector<S>(nn::FlattenValues(ref.Params()) - S(0.1) * grads), sync.Params());
    nn::UnflattenValues(nn::Vector<S>(nn::FlattenValues(ref.Params()) - S(0.1) * nn::FlattenGrads(ref.Params())),
                        ref.Params());
  }
  return check;
}

std::vector<std::vector<int>> CasesFor(int w) {
  switch (w) {
    case 1: return {{5}};
    case 2: return {{3, 1}, {0, 6}};
    default: return {{1, 3, 0, 5}, {2, 2, 2, 2}};
  }
}

class DeviceSyncBatchNorm : public ::testing::TestWithParam<int> {};

TEST_P(DeviceSyncBatchNorm, EqualsOneProcessPerStep) {
  DDP_REQUIRE_BACKEND();
  const int w = GetParam();
  for (const std::vector<int>& batches : CasesFor(w)) {
    harness::WorldOptions o;
    o.world_size = w;
    o.backend = testing::TestBackend();
    o.timeout_s = 30;
    const auto world = harness::RunWorld(o, [&](comm::Comm& comm) {
      RankResult r;
      device::CopyCount step0, unused;
      SyncBnTraffic traffic, traffic32;
      int64_t eval64 = -1, eval32 = -1;
      r.f64 = RunSteps<double>(comm, batches, &step0, &traffic, &eval64).ToJson();
      r.f32 = RunSteps<float>(comm, batches, &unused, &traffic32, &eval32).ToJson();
      r.copy_counts = Flat(step0);
      r.collectives_per_step = static_cast<double>(traffic.collectives) / kTrainSteps;
      r.eval_collectives = static_cast<double>(eval64 + eval32);
      return Json(r);
    });
    ASSERT_TRUE(world.ok) << world.failure;
    for (int rank = 0; rank < w; ++rank) {
      const RankResult r = world.rank_values[rank].get<RankResult>();
      const std::string where = "W=" + std::to_string(w) + " rank " + std::to_string(rank) + " batch " +
                                std::to_string(batches[rank]);
      for (const Json* j : {&r.f64, &r.f32}) {
        const exact::StepCheck check = exact::StepCheck::FromJson(*j);
        EXPECT_TRUE(check.exact()) << where << ": " << Dump(*j);
        EXPECT_EQ(check.steps(), kTrainSteps + 1) << where;
      }
      std::printf("%s: worst rel err double %.3g, float %.3g\n", where.c_str(),
                  exact::StepCheck::FromJson(r.f64).worst(), exact::StepCheck::FromJson(r.f32).worst());
      // One training step's copies of a b x 4 x 3 x 2 batch, double: x and
      // dy up, y and dx down (none when b = 0); gamma, beta, running stats
      // and the count up (4C + 1); running stats and gradient sums down
      // (2 x 2C); the W gathered counts down; nothing else.
      const double b = batches[rank], act = b * kC * kH * kW * 8, calls = b > 0 ? 2 : 0;
      const std::vector<double> want = {calls, 2 * act, calls, 2 * act, 1, (4 * kC + 1) * 8.0,
                                        2, 4 * kC * 8.0, 1, w * 8.0, 0, 0};
      EXPECT_EQ(r.copy_counts, want) << where;
      // One all-gather forward, one all-reduce backward; eval: none.
      EXPECT_EQ(r.collectives_per_step, 2.0) << where;
      EXPECT_EQ(r.eval_collectives, 0.0) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, DeviceSyncBatchNorm, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace ddp::small_batch_bn
