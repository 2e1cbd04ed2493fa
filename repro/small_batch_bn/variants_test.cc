// The repro must keep reproducing the damage itself: on noisy digits, per-rank
// BatchNorm at W = 4 x 2 per rank ends with a validation error at least 5 pp
// above SyncBN's at the same global batch (8), the 95% interval of the
// seed-paired difference above 0, and the ranks normalise with different
// batch means. Reduced configuration (3 seeds, 4 epochs at a 4x higher
// learning rate): the models are less trained than in the README's run
// (SyncBN ~29% error instead of ~20%), the gap is larger (~13 pp).
#include <algorithm>
#include <string>
#include <vector>

#include "core/testing/backend.h"
#include "gtest/gtest.h"
#include "repro/small_batch_bn/variants.h"

namespace ddp::small_batch_bn {
namespace {

double M(const results::Json& j, const char* k) { return j.at(k).get<double>(); }

// The training length, full and where NCCL ranks share a GPU
// (core/testing/README.md: one gradient all-reduce per step, tens of
// milliseconds each there). One epoch still leaves per-rank BN ~7 pp behind
// SyncBN (3 seeds, interval above 0); 2 seeds are too few for the interval.
struct Sizes {
  int epochs = 4;
  double warmup_epochs = 1;
};
Sizes GetSizes() {
  return testing::PickSizes(4, Sizes{4, 1}, Sizes{1, 0},
                            "1 epoch without warm-up (not 4 with 1 of warm-up)");
}

TEST(SmallBatchBnRepro, PerRankBnIsWorseThanSyncBnByAtLeast5pp) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.world_size = 4;
  f.batch_size = 2;
  f.backend = testing::TestBackend();
  f.seeds = 3;
  f.timeout = 30;
  const Sizes sizes = GetSizes();
  PairOptions o;
  o.epochs = sizes.epochs;
  o.warmup_epochs = sizes.warmup_epochs;
  o.base_lr = 0.2;
  const auto records = RunRepro(f, o);
  ASSERT_EQ(records.size(), 1u);
  const results::Record& r = records[0];
  ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
  EXPECT_EQ(r.verdict, results::Verdict::kReproduced) << Dump(r.measured);
  // The record carries the fields a reader re-derives the table from.
  EXPECT_EQ(M(r.measured, "seeds"), 3);
  EXPECT_EQ(M(r.reference, "seeds"), 3);
  EXPECT_GT(M(r.measured, "val_error_ci95"), 0);
  EXPECT_GT(M(r.reference, "val_error_ci95"), 0);
  const double gap = M(r.measured, "val_error_gap"), ci = M(r.measured, "val_error_gap_ci95");
  EXPECT_NEAR(gap, M(r.measured, "val_error") - M(r.reference, "val_error"), 1e-12);
  EXPECT_GE(gap, 0.05) << "per-rank BN " << M(r.measured, "val_error") << " vs SyncBN " << M(r.reference, "val_error");
  EXPECT_GT(gap - ci, 0.0);
  // Mechanism (secondary): the ranks normalise with different batch means
  // (second layer ~0.1 sd apart, first layer less: pixel noise averages out
  // over 64 positions).
  EXPECT_GE(M(r.measured, "rank_spread2"), 0.04);
  EXPECT_LE(M(r.measured, "rank_spread2"), 0.4);
  EXPECT_LT(M(r.measured, "rank_spread1"), M(r.measured, "rank_spread2"));
  // The epoch-to-epoch swing (claim:small_batch_bn/accuracy-jumps-curve-unstable,
  // claim:small_batch_bn/sync-bn-swing-drops) re-derives from each
  // seed's own curve: one value per epoch, the last the final error, and the
  // largest rise between consecutive epochs.
  for (const results::Json* side : {&r.measured, &r.reference}) {
    const results::Json& curves = side->at("val_error_per_epoch_by_seed");
    ASSERT_EQ(curves.size(), 3u);
    double max_rise = 0;
    for (std::size_t k = 0; k < curves.size(); ++k) {
      const std::vector<double> c = curves[k].get<std::vector<double>>();
      ASSERT_EQ(c.size(), static_cast<std::size_t>(sizes.epochs));
      EXPECT_EQ(c.back(), side->at("val_errors")[k].get<double>());
      double rise = 0;
      for (std::size_t e = 1; e < c.size(); ++e) rise = std::max(rise, c[e] - c[e - 1]);
      EXPECT_EQ(side->at("val_error_max_rises")[k].get<double>(), rise) << "seed " << k;
      max_rise = std::max(max_rise, rise);
    }
    EXPECT_EQ(M(*side, "val_error_max_rise"), max_rise);
  }
}

// Seed 003's debug step (the bn_eval row): with the BN layers in eval mode
// from epoch 0 the running statistics never move from their initial 0 / 1
// (PyTorch's eval mode updates nothing) and no rank spread is measured.
TEST(SmallBatchBnRepro, BnEvalFromTheStartFreezesTheRunningStatistics) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.world_size = 2;
  f.backend = testing::TestBackend();
  f.seeds = 1;
  f.timeout = 30;
  PairOptions o;
  o.epochs = 1;
  o.warmup_epochs = 0;
  TrainConfig cfg = BaseConfig(f, o);
  cfg.batch_per_rank = 8;  // the mechanism does not depend on b; fewer steps
  cfg.bn_eval_from_epoch = 0;
  const std::vector<TrainResult> runs = RunDdp(f, cfg);
  ASSERT_EQ(runs.size(), 1u);
  Model fresh(cfg.task.task, NormKind::kBatchNorm, cfg.task.seed, nullptr);
  const nn::Vector<double> initial = nn::FlattenBuffers(fresh.Buffers());
  ASSERT_EQ(runs[0].buffers.size(), initial.size());
  EXPECT_EQ(runs[0].buffers, initial) << "the running statistics moved in eval mode";
  EXPECT_EQ(runs[0].rank_spread1, -1);
  EXPECT_GT(runs[0].steps, 0);
  // Trained nonetheless: the parameters moved.
  EXPECT_NE(runs[0].params, nn::FlattenValues(fresh.Params()));
}

// The bn_eval record re-derives from its curves: up to the switch (epoch E)
// the run is per_rank_bn's run (same seed: the same curve to the last bit);
// the swing is each seed's largest rise from epoch max(E, 1) on, and the
// verdict is "per_rank_bn's minus bn_eval's has a 95% interval above 0".
TEST(SmallBatchBnRepro, BnEvalRecordReDerivesFromItsCurves) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.world_size = 2;
  f.batch_size = 8;
  f.backend = testing::TestBackend();
  // Where NCCL ranks share a GPU: 2 epochs (the switch at 1) of 2 seeds, so
  // the three runs stay near 30 s at tens of milliseconds per collective.
  struct Sizes {
    int epochs;
    int seeds;
  };
  const Sizes sizes = testing::PickSizes(2, Sizes{3, 3}, Sizes{2, 2}, "2 epochs x 2 seeds (not 3 x 3)");
  f.seeds = sizes.seeds;
  f.timeout = 30;
  PairOptions o;
  o.epochs = sizes.epochs;
  o.warmup_epochs = 0;
  o.base_lr = 0.2;
  o.bn_eval_from_epoch = 1;
  const auto records = RunRepro(f, o);
  ASSERT_EQ(records.size(), 1u);
  const std::size_t n = static_cast<std::size_t>(sizes.seeds), epochs = static_cast<std::size_t>(sizes.epochs);
  const results::Record& r = records[0];
  ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
  EXPECT_EQ(r.variant, "bn_eval");
  EXPECT_EQ(r.config.at("bn_eval_from_epoch").get<int>(), 1);
  const results::Json& mine = r.measured.at("val_error_per_epoch_by_seed");
  const results::Json& theirs = r.measured.at("per_rank_bn_val_error_per_epoch_by_seed");
  ASSERT_EQ(mine.size(), n);
  ASSERT_EQ(theirs.size(), n);
  EXPECT_EQ(M(r.measured, "swing_from_epoch"), 1);
  double cut = 0, final_diff = 0, mine_rise = 0, theirs_rise = 0;  // means over seeds
  for (std::size_t k = 0; k < n; ++k) {
    const std::vector<double> a = mine[k].get<std::vector<double>>(), b = theirs[k].get<std::vector<double>>();
    ASSERT_EQ(a.size(), epochs);
    ASSERT_EQ(b.size(), epochs);
    EXPECT_EQ(a[0], b[0]) << "seed " << k << ": epoch 0 is trained the same way in both";
    double ra = 0, rb = 0;
    for (std::size_t e = 1; e < epochs; ++e) {
      ra = std::max(ra, a[e] - a[e - 1]);
      rb = std::max(rb, b[e] - b[e - 1]);
    }
    EXPECT_EQ(r.measured.at("val_error_max_rises_from")[k].get<double>(), ra);
    EXPECT_EQ(r.measured.at("per_rank_bn_max_rises_from")[k].get<double>(), rb);
    cut += (rb - ra) / static_cast<double>(n);
    mine_rise += ra / static_cast<double>(n);
    theirs_rise += rb / static_cast<double>(n);
    final_diff += (a.back() - b.back()) / static_cast<double>(n);
  }
  EXPECT_NEAR(M(r.measured, "swing_cut"), cut, 1e-15);
  EXPECT_NEAR(M(r.measured, "val_error_mean_max_rise_from"), mine_rise, 1e-15);
  EXPECT_NEAR(M(r.measured, "per_rank_bn_mean_max_rise_from"), theirs_rise, 1e-15);
  EXPECT_NEAR(M(r.measured, "val_error_minus_per_rank_bn"), final_diff, 1e-15);
  EXPECT_EQ(r.verdict, M(r.measured, "swing_cut") - M(r.measured, "swing_cut_ci95") > 0
                           ? results::Verdict::kReproduced
                           : results::Verdict::kNotReproduced);
}

// The "no augmentation" lever: the training noise drawn once, the same
// noisy images every epoch; by default every epoch draws its own.
TEST(SmallBatchBnRepro, NoAugmentationShowsTheSameNoisyImagesEveryEpoch) {
  TaskConfig c;
  c.seed = 3;
  auto same = [](const Images& a, const Images& b) {
    return a.x.data.size() == b.x.data.size() && a.x.data == b.x.data;
  };
  EXPECT_FALSE(same(TrainImages(c, 0), TrainImages(c, 1)));
  c.fresh_noise = false;
  EXPECT_TRUE(same(TrainImages(c, 0), TrainImages(c, 1)));
  EXPECT_TRUE(same(TrainImages(c, 0), TrainImages(c, 7)));
}

// --levers: one row per lever, each trained (and its SyncBN reference) with
// the lever applied, and the record says which and with what.
TEST(SmallBatchBnRepro, LeversRunOneRowPerLeverWithItsSettings) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.world_size = 2;
  f.batch_size = 16;  // few steps: the rows' settings are checked, not the damage
  f.backend = testing::TestBackend();
  f.seeds = 2;
  f.timeout = 30;
  PairOptions o;
  o.epochs = testing::PickSizes(2, 2, 1, "1 epoch (not 2)");
  o.warmup_epochs = 0;
  o.levers = true;
  ASSERT_EQ(ValidateOptions(o), "");
  const auto records = RunRepro(f, o);
  ASSERT_EQ(records.size(), 5u);
  std::vector<std::string> levers;
  std::vector<double> ref_errors;
  for (const results::Record& r : records) {
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.variant, "lever");
    const std::string lever = r.config.at("lever").get<std::string>();
    levers.push_back(lever);
    const double base_peak = 0.05 * 2 * 16 / 32.0;
    EXPECT_DOUBLE_EQ(M(r.config, "peak_lr"), lever == "lr_x0.25" ? base_peak / 4
                                             : lever == "lr_x4"  ? base_peak * 4
                                             : lever == "adam"   ? 1e-3
                                                                 : base_peak);
    EXPECT_EQ(r.config.at("optimizer").get<std::string>(), lever == "adam" ? "adam" : "sgd");
    if (lever == "adam") {
      EXPECT_FALSE(r.config.contains("momentum"));
    } else {
      EXPECT_EQ(M(r.config, "momentum"), lever == "momentum_0" ? 0.0 : 0.9);
    }
    EXPECT_EQ(r.config.at("fresh_noise").get<bool>(), lever != "no_augmentation");
    ref_errors.push_back(M(r.reference, "train_error"));
  }
  EXPECT_EQ(levers, (std::vector<std::string>{"lr_x0.25", "lr_x4", "momentum_0", "adam", "no_augmentation"}));
  // Each lever changed the training: the SyncBN references differ.
  std::sort(ref_errors.begin(), ref_errors.end());
  EXPECT_EQ(std::adjacent_find(ref_errors.begin(), ref_errors.end()), ref_errors.end());
  o.sweep = true;
  EXPECT_NE(ValidateOptions(o), "");
  o.sweep = false;
  o.task = "tiny_images";  // no pixel noise for no_augmentation to fix
  EXPECT_NE(ValidateOptions(o), "");
}

}  // namespace
}  // namespace ddp::small_batch_bn
