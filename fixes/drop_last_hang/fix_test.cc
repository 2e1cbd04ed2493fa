// Every fix completes with equal collective counts on all ranks (checked
// mode on), and every step equals the one-process step started from the
// same state (averaged gradient, parameters, momentum: 1e-12 relative).
// join_initial_world_size (PyTorch's Join default) must be inexact by
// exactly 1 - c_min/W on its worst step: the check can fail, and does by
// the amount the arithmetic says.
#include "fixes/drop_last_hang/fix_run.h"

#include <cmath>
#include <set>
#include <vector>

#include "core/device/device_record_check.h"
#include "core/exact/replica.h"
#include "core/exact/step_check.h"
#include "core/testing/backend.h"
#include "gtest/gtest.h"
#include "repro/drop_last_hang/scenario.h"

namespace ddp::drop_last_hang {
namespace {

harness::CommonFlags Flags(int64_t n) {
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.n = n;
  f.timeout = 10;
  return f;
}

double Measured(const results::Record& r, const char* key) {
  return r.measured.at(key).get<double>();
}

// What every row must show, whatever the cell.
void CheckRow(const results::Record& r) {
  const std::string what = r.variant + " W=" + std::to_string(r.world_size) + " " +
                           Dump(r.config) + " " + Dump(r.measured) + " " + r.error;
  ASSERT_NE(r.verdict, results::Verdict::kError) << what;
  ASSERT_EQ(r.verdict, results::ExpectedVerdict(r)) << what;
  EXPECT_TRUE(r.measured.at("equal_collectives").get<bool>()) << what;
  EXPECT_EQ(Measured(r, "ranks_checked"), r.world_size) << what;
  const double steps = Measured(r, "steps");
  EXPECT_GT(steps, 0) << what;
  EXPECT_EQ(steps, r.reference.at("steps").get<double>()) << what;
  // Every rank judged every one of its steps.
  EXPECT_EQ(r.measured.at("step_check").at("steps_checked").get<double>(),
            steps * r.world_size)
      << what;
  const double fewest = r.reference.at("contributors_min").get<double>();
  EXPECT_EQ(Measured(r, "contributors_min"), r.variant.starts_with("join") ? fewest : r.world_size)
      << what;
  if (r.variant == "join_initial_world_size") {
    const double expected = 1.0 - fewest / r.world_size;
    EXPECT_NEAR(Measured(r, "grad_rel_err"), expected, 1e-12) << what;
    EXPECT_EQ(r.verdict == results::Verdict::kInexact, fewest < r.world_size) << what;
  } else {
    EXPECT_LE(Measured(r, "grad_rel_err"), exact::kDoubleTolerance) << what;
    EXPECT_LE(r.measured.at("step_check").at("worst_rel_err").get<double>(),
              exact::kDoubleTolerance)
        << what;
  }
  if (r.variant.starts_with("join")) {
    // Two collectives per step (flag, gradients) and the final all-zero flag.
    EXPECT_EQ(r.measured.at("collectives_per_rank")[0].get<double>(), 2 * steps + 1)
        << what;
  }
}

// The sizes, full and where NCCL ranks share a GPU (core/testing/README.md:
// each world costs seconds there, each collective tens of milliseconds x W).
struct Sizes {
  // The filtered_batches rows' batch, and what PyTorch's Join default is off
  // by there: with batch 2 the ranks run [124, 120, 124, 123] steps (2 of 4
  // on the last: 1 - 2/4); with batch 5, [51, 50, 51, 51] (1 - 3/4).
  int filtered_batch = 2;
  double filtered_join_error = 0.5;
  // The other world sizes and batches, and the sets of each its records show.
  std::vector<Cell> grid;
  std::set<int> grid_worlds, grid_batches;
};
Sizes GetSizes() {
  return testing::PickSizes(
      8,
      Sizes{2, 0.5, {{1, 8, 3}, {2, 1, 2}, {3, 3, 1}, {5, 2, 8}, {8, 3, 1}}, {1, 2, 3, 5, 8},
            {1, 2, 3, 8}},
      Sizes{5, 0.25, {{5, 2, 8}}, {5}, {2, 8}},
      "filtered batches of 5 (51 steps, not 124 of batch 2); the grid's W = 5 cell only (not "
      "also W = 1, 2, 3, 8)");
}

TEST(DropLastHangFix, DefaultsPerStepExactAndJoinDefaultOffByOneMinusCOverW) {
  DDP_REQUIRE_BACKEND();
  const Sizes sizes = GetSizes();
  harness::CommonFlags f = Flags(1003);
  f.world_size = 4;
  std::vector<Cell> cells = Cells(f, /*sweep=*/false);
  cells[0].filtered_batch_size = sizes.filtered_batch;
  const auto records = RunFix(f, cells);
  ASSERT_EQ(records.size(), 9u);
  int inexact = 0;
  for (const auto& r : records) {
    CheckRow(r);
    if (::testing::Test::HasFatalFailure()) return;
    const std::string sharding = r.config.at("sharding").get<std::string>();
    const bool empty = r.config.at("empty_rank").get<bool>();
    const double steps = Measured(r, "steps");
    if (r.variant == "drop_last") {
      EXPECT_EQ(steps, 8);  // 1025 -> 256 per rank -> 8 batches
    } else if (empty) {
      EXPECT_EQ(steps, 1);  // N = 3: one sample on ranks 0-2, none on rank 3
    } else if (sharding == "uneven_shards") {
      EXPECT_EQ(steps, 9);
    }
    if (r.variant == "join_initial_world_size") {
      ++inexact;
      // uneven: rank 0 alone on step 9 (1 - 1/4); filtered: Sizes above;
      // empty rank: 3 of 4 (1 - 3/4).
      const double expected = empty                        ? 0.25
                              : sharding == "uneven_shards" ? 0.75
                                                            : sizes.filtered_join_error;
      EXPECT_NEAR(Measured(r, "grad_rel_err"), expected, 1e-12) << Dump(r.config);
      EXPECT_EQ(r.verdict, results::Verdict::kInexact);
    }
  }
  EXPECT_EQ(inexact, 3);
  EXPECT_EQ(results::ExitStatus(records), 0);  // inexact is what that variant expects
}

// --device emulated (the GPU in the _nccl twin): the gradient allreduce on a
// device buffer gives every row the host run's numbers exactly (the engine
// sums the same values; the same collectives, checked mode), and rank 0's
// copies are one gradient up and one down per step it ran (a join rank's
// zero-gradient shadow steps included), parameter kind only; the int64
// flag and count allreduces stay host buffers.
TEST(DropLastHangFix, DeviceGradientAllreduceGivesTheHostRecords) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f = Flags(61);
  const std::vector<Cell> cells = {{3, 3, 2}};
  const auto host = RunFix(f, cells, "host");
  const std::string on = testing::TestBackend() == "nccl" ? "cuda" : "emulated";
  const auto dev = RunFix(f, cells, on);
  ASSERT_EQ(host.size(), 9u);
  ASSERT_EQ(host.size(), dev.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    const results::Record &h = host[i], &d = dev[i];
    SCOPED_TRACE(d.variant + " " + Dump(d.config) + " " + Dump(d.measured) + " " + d.error);
    CheckRow(d);
    if (::testing::Test::HasFatalFailure()) return;
    const results::Json copies = device::ExpectSameAsHost(h, d, on);
    ASSERT_FALSE(copies.is_null());
    Config c{.sharding = d.config.at("sharding") == "uneven_shards" ? Sharding::kUnevenShards
                                                                   : Sharding::kFilteredBatches,
             .n = d.config.at("n").get<int64_t>(), .world_size = d.world_size,
             .batch_size = d.config.at("batch_size").get<int>(), .seed = d.config.at("seed").get<uint64_t>()};
    const int64_t params = replica::Replica(ModelOptions(*MakeDataset(c), c)).NumParams();
    const int64_t steps = d.measured.at("steps").get<int64_t>();
    for (const char* dir : {"h2d", "d2h"}) {
      EXPECT_EQ(copies.at("parameter").at(dir).at("calls"), steps);
      EXPECT_EQ(copies.at("parameter").at(dir).at("bytes"), 8 * params * steps);
      EXPECT_EQ(copies.at(dir).at("calls"), steps);  // no other kind
    }
  }
}

// W in {1, 2, 3, 5, 8} (4 above) and per-rank batches {1, 2, 3, 8} on both
// pipelines, small N so that it stays fast (Sizes: a shared GPU runs W = 5).
TEST(DropLastHangFix, PerStepExactAcrossWorldSizesAndBatchSizes) {
  DDP_REQUIRE_BACKEND();
  const Sizes sizes = GetSizes();
  const harness::CommonFlags f = Flags(61);
  const auto records = RunFix(f, sizes.grid);
  std::set<int> worlds, batches;
  for (const auto& r : records) {
    CheckRow(r);
    if (::testing::Test::HasFatalFailure()) return;
    worlds.insert(r.world_size);
    batches.insert(static_cast<int>(r.config.at("batch_size").get<double>()));
  }
  EXPECT_EQ(worlds, sizes.grid_worlds);
  EXPECT_EQ(batches, sizes.grid_batches);
  EXPECT_EQ(results::ExitStatus(records), 0);
}

}  // namespace
}  // namespace ddp::drop_last_hang
