// fvcore issue 152 (detectron2 issues 5398 / 5409): fvcore's update_bn_stats
// (PreciseBN) averages each rank's own batches and never synchronises the
// batch counts, so ranks with different numbers of batches end with
// different running statistics, and averaging those across ranks weighs a
// rank with 1 batch like a rank with 3. Ours (repro/small_batch_bn/task.h
// PreciseBn) sends the sums and the batch count in one all-reduce: with
// rank 0 holding 1 batch and rank 1 holding 3 (and W = 3 with an empty rank),
// every rank's running statistics equal the one-process PreciseBN over all
// the batches to 1e-12 and are the same bits on every rank. The fvcore
// behaviour on the same batches (each rank alone, and the equal-weight
// average of the ranks) is measured off, so the case tells them apart.
// With the BatchNorm layers on a device (the emulated one on Gloo, the GPU
// in the _nccl twin), the same all-reduce runs on a device buffer of the
// model's device: the same results, and exactly one statistic upload and
// one download of the packed sums added to what the forwards copy.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device/copy_json.h"
#include "core/device/device.h"
#include "core/harness/world.h"
#include "core/nn/batch_norm.h"
#include "core/testing/backend.h"
#include "gtest/gtest.h"
#include "repro/small_batch_bn/task.h"

namespace ddp::small_batch_bn {
namespace {

using results::Json;

// Batch k of rank r: 4 training images, deterministic.
Images Batch(const Images& train, int rank, int k) {
  std::vector<int64_t> idx;
  for (int i = 0; i < 4; ++i) idx.push_back(100 * rank + 4 * k + i);
  return Take(train, idx);
}

std::vector<double> RunningStats(Model& m) {
  std::vector<double> out;
  for (int l = 0; l < 2; ++l) {
    for (const auto* buf : {&m.bn(l)->running_mean(), &m.bn(l)->running_var()}) {
      out.insert(out.end(), buf->data(), buf->data() + buf->size());
    }
  }
  return out;
}

// Rank r's batches (batches[r] of them).
std::vector<Images> RankBatches(const Images& train, const std::vector<int>& batches, int r) {
  std::vector<Images> out;
  for (int k = 0; k < batches[r]; ++k) out.push_back(Batch(train, r, k));
  return out;
}

// The one-process PreciseBN (host) over every rank's batches in rank order.
std::vector<double> OneProcessStats(const Images& train, const std::vector<int>& batches) {
  std::vector<Images> all;
  for (int r = 0; r < static_cast<int>(batches.size()); ++r) {
    for (Images& b : RankBatches(train, batches, r)) all.push_back(std::move(b));
  }
  Model one(Task::kDigits, NormKind::kBatchNorm, 0, nullptr);
  PreciseBn(nullptr, one, all);
  return RunningStats(one);
}

harness::WorldOptions World(const std::vector<int>& batches) {
  harness::WorldOptions o;
  o.world_size = static_cast<int>(batches.size());
  o.backend = testing::TestBackend();
  o.timeout_s = 30;
  return o;
}

double RelError(const std::vector<double>& got, const std::vector<double>& want) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    d = std::max(d, std::fabs(got[i] - want[i]));
    s = std::max(s, std::fabs(want[i]));
  }
  return d / s;
}

// One rank's PreciseBN: ours, and fvcore 152's ways on a rank with batches.
struct TrackerResult {
  double ours_rel_error = 0;
  double ours_first = 0;  // the first running statistic (same bits on every rank)
  bool has_batches = false;
  double alone_rel_error = -1;          // this rank's batches only (has_batches)
  double equal_average_rel_error = -1;  // the ranks' results averaged equally (has_batches)
};
DDP_JSON_FIELDS(TrackerResult, ours_rel_error, ours_first, has_batches, alone_rel_error,
                equal_average_rel_error)

TEST(PreciseBnTrackerCases, Fvcore152BatchCountsSynchronised) {
  DDP_REQUIRE_BACKEND();
  const TaskConfig task;
  const Images train = TrainImages(task, 0);
  for (const std::vector<int>& batches : {std::vector<int>{1, 3}, std::vector<int>{2, 0, 3}}) {
    const std::vector<double> want = OneProcessStats(train, batches);
    const auto world = harness::RunWorld(World(batches), [&](comm::Comm& comm) {
      const std::vector<Images> mine = RankBatches(train, batches, comm.rank());
      Model ours(Task::kDigits, NormKind::kBatchNorm, 0, nullptr);
      PreciseBn(&comm, ours, mine);
      TrackerResult out;
      out.ours_rel_error = RelError(RunningStats(ours), want);
      out.ours_first = RunningStats(ours)[0];
      // fvcore 152: this rank's batches only, no communication.
      if (!mine.empty()) {
        Model alone(Task::kDigits, NormKind::kBatchNorm, 0, nullptr);
        PreciseBn(nullptr, alone, mine);
        std::vector<double> stats = RunningStats(alone);
        out.has_batches = true;
        out.alone_rel_error = RelError(stats, want);
        // ... and the ranks' results averaged with equal weights.
        stats.push_back(1.0);  // ranks that had batches
        comm.Allreduce(std::span<double>(stats));
        const double ranks = stats.back();
        stats.pop_back();
        for (double& v : stats) v /= ranks;
        out.equal_average_rel_error = RelError(stats, want);
      } else {
        std::vector<double> zeros(want.size() + 1, 0.0);
        comm.Allreduce(std::span<double>(zeros));
      }
      return Json(out);
    });
    ASSERT_TRUE(world.ok) << world.failure;
    std::vector<TrackerResult> ranks;
    for (const Json& j : world.rank_values) ranks.push_back(j.get<TrackerResult>());
    for (const TrackerResult& e : ranks) {
      EXPECT_LE(e.ours_rel_error, 1e-12);
      EXPECT_EQ(e.ours_first, ranks[0].ours_first) << "same bits on every rank";
      if (e.has_batches) {
        EXPECT_GT(e.alone_rel_error, 1e-3) << "fvcore 152: ranks differ";
        EXPECT_GT(e.equal_average_rel_error, 1e-4)
            << "an equal-weight average is off when batch counts differ";
      }
    }
    std::printf("fvcore 152, batches per rank %d..: rank 0 %s\n", batches[0],
                Dump(world.rank_values[0]).c_str());
  }
}

// One rank's PreciseBN with the layers on a device.
struct DeviceResult {
  double rel_error = 0;
  double first = 0;
  bool copies_as_expected = false;
  std::string extra_copies;  // what the all-reduce added (core/device/copy_json.h), for the log
};
DDP_JSON_FIELDS(DeviceResult, rel_error, first, copies_as_expected, extra_copies)

TEST(PreciseBnOnDevice, MetricAllreduceOnTheModelsDevice) {
  DDP_REQUIRE_BACKEND();
  const bool nccl = testing::TestBackend() == "nccl";
  const device::Placement on = nccl ? device::Placement::kAuto : device::Placement::kEmulated;
  const TaskConfig task;
  const Images train = TrainImages(task, 0);
  // The packed sums: per layer the C batch means and C variances (8 and 16
  // channels), then the batch count: 2 * (8 + 16) + 1 = 49 doubles = 392 B.
  constexpr int64_t kPackedBytes = (2 * (8 + 16) + 1) * 8;
  for (const std::vector<int>& batches : {std::vector<int>{1, 3}, std::vector<int>{2, 0, 3}}) {
    const std::vector<double> want = OneProcessStats(train, batches);
    const auto world = harness::RunWorld(World(batches), [&](comm::Comm& comm) {
      const std::vector<Images> mine = RankBatches(train, batches, comm.rank());
      Model ours(Task::kDigits, NormKind::kBatchNorm, 0, &comm, 4, nullptr, on);
      if (ours.device() == nullptr) throw std::runtime_error("the model has no device");
      const device::CopyCount before = ours.device_copies();
      PreciseBn(&comm, ours, mine);
      const device::CopyCount with_allreduce = ours.device_copies() - before;
      // The same forwards without the all-reduce (nothing for an empty rank).
      device::CopyCount forwards;
      if (!mine.empty()) {
        Model alone(Task::kDigits, NormKind::kBatchNorm, 0, &comm, 4, nullptr, on);
        PreciseBn(nullptr, alone, mine);
        forwards = alone.device_copies();
      }
      device::CopyCount want_extra;
      const int stat = static_cast<int>(device::CopyKind::kStatistic);
      want_extra.h2d[stat] = {1, kPackedBytes};
      want_extra.d2h[stat] = {1, kPackedBytes};
      const device::CopyCount extra = with_allreduce - forwards;
      DeviceResult out;
      out.rel_error = RelError(RunningStats(ours), want);
      out.first = RunningStats(ours)[0];
      out.copies_as_expected = extra == want_extra;
      out.extra_copies = Dump(device::ToJson(extra));
      return Json(out);
    });
    ASSERT_TRUE(world.ok) << world.failure;
    std::vector<DeviceResult> ranks;
    for (const Json& j : world.rank_values) ranks.push_back(j.get<DeviceResult>());
    for (const DeviceResult& e : ranks) {
      EXPECT_LE(e.rel_error, 1e-12);
      EXPECT_EQ(e.first, ranks[0].first) << "same bits on every rank";
      EXPECT_TRUE(e.copies_as_expected) << e.extra_copies;
    }
    std::printf("PreciseBN on a device, batches per rank %d..: rank 0 %s\n", batches[0],
                Dump(world.rank_values[0]).c_str());
  }
}

}  // namespace
}  // namespace ddp::small_batch_bn
