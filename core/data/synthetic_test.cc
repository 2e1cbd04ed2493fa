#include "core/data/synthetic.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "core/metrics/binary.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

TEST(GaussianBinary, ClosedFormAucAtDefault) {
  EXPECT_NEAR(GaussianBinary::BayesAuc(GaussianBinaryConfig{}.separation), 0.86, 1e-4);
  EXPECT_NEAR(GaussianBinary::BayesAuc(GaussianBinary::SeparationForAuc(0.75)), 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(GaussianBinary::BayesAuc(0.0), 0.5);
}

TEST(GaussianBinary, MeasuredOracleAucMatchesClosedForm) {
  for (double target : {0.7, 0.86, 0.95}) {
    GaussianBinary data({.size = 100000, .separation = GaussianBinary::SeparationForAuc(target),
                         .seed = 11});
    std::vector<double> scores;
    std::vector<int> labels;
    for (int64_t i = 0; i < data.Size(); ++i) {
      const Sample s = data.Get(i);
      scores.push_back(data.OracleScore(s));
      labels.push_back(s.label);
    }
    // Standard error of an AUC near 0.86 with 50k/50k samples is ~0.0012.
    const double auc = metrics::RocAuc(scores, labels);
    std::printf("oracle AUC on 1e5 samples: target %.4f measured %.6f\n", target, auc);
    EXPECT_NEAR(auc, target, 0.006) << "target " << target;
    int positives = 0;
    for (int y : labels) positives += y;
    EXPECT_NEAR(positives / 1e5, 0.5, 0.01);
  }
}

TEST(GaussianBinary, SampleIsAPureFunctionOfSeedAndIndex) {
  GaussianBinary a({.size = 1003, .seed = 5}), b({.size = 5000, .seed = 5}),
      c({.size = 1003, .seed = 6});
  for (int64_t i : {0, 1, 500, 1002}) {
    EXPECT_EQ(a.Get(i).x, b.Get(i).x);
    EXPECT_EQ(a.Get(i).label, b.Get(i).label);
    EXPECT_NE(a.Get(i).x, c.Get(i).x);
  }
  EXPECT_THROW(a.Get(1003), std::out_of_range);
  EXPECT_THROW(a.Get(-1), std::out_of_range);
}

// Pinned bits: the generator uses only IEEE basic operations, so these are
// the same on every platform and optimisation level (these were taken at -O0,
// the library is built at -O2); a change here changes every experiment's data.
TEST(Synthetic, PinnedValues) {
  GaussianBinary binary({.seed = 0});
  GaussianMulticlass multi({.seed = 0});
  TinyImages images({.seed = 0});
  std::printf("pins %a %d %a %d %a %d\n", binary.Get(7).x[3], binary.Get(7).label,
              multi.Get(7).x[2], multi.Get(7).label, images.Get(7).x[100], images.Get(7).label);
  EXPECT_EQ(binary.Get(7).x[3], -0x1.0b0ae39c1d4fbp-2);
  EXPECT_EQ(binary.Get(7).label, 0);
  EXPECT_EQ(multi.Get(7).x[2], -0x1.19f138f1b1eddp+0);
  EXPECT_EQ(multi.Get(7).label, 3);
  EXPECT_EQ(images.Get(7).x[100], -0x1.c76859070a345p+0);
  EXPECT_EQ(images.Get(7).label, 2);
}

TEST(GaussianMulticlass, NearestMeanAccuracyMatchesIntegral) {
  GaussianMulticlass data({.size = 100000, .seed = 3});
  // For K = 2 the integral is Phi(radius / sqrt 2): a check of the quadrature.
  GaussianMulticlass two({.num_classes = 2, .radius = 1.5});
  EXPECT_NEAR(two.BayesAccuracy(), 0.5 * std::erfc(-1.5 / 2.0), 1e-10);
  int correct = 0;
  std::vector<int> per_class(4, 0);
  for (int64_t i = 0; i < data.Size(); ++i) {
    const Sample s = data.Get(i);
    correct += data.OraclePredict(s) == s.label;
    ++per_class[s.label];
  }
  std::printf("nearest-mean accuracy on 1e5 samples: %.6f, integral %.6f\n", correct / 1e5,
              data.BayesAccuracy());
  EXPECT_NEAR(correct / 1e5, data.BayesAccuracy(), 0.007);  // se ~0.0015
  for (int c : per_class) EXPECT_NEAR(c, 25000, 700);
}

TEST(TinyImages, PerChannelMeansAndVariancesAreFarFromZeroOne) {
  TinyImages data({.size = 4000, .seed = 1});
  const auto& cfg = data.config();
  for (int c = 0; c < 3; ++c) {
    double sum = 0, sum2 = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < data.Size(); ++i) {
      const Sample s = data.Get(i);
      for (int p = 0; p < 64; ++p) {
        const double v = s.x[c * 64 + p];
        sum += v;
        sum2 += v * v;
        ++count;
      }
    }
    const double mean = sum / count, var = sum2 / count - mean * mean;
    EXPECT_NEAR(mean, cfg.channel_mean[c], 0.01 * cfg.channel_std[c]) << "channel " << c;
    EXPECT_NEAR(var, cfg.channel_std[c] * cfg.channel_std[c],
                0.01 * cfg.channel_std[c] * cfg.channel_std[c])
        << "channel " << c;
    EXPECT_GT(std::abs(cfg.channel_mean[c]) + std::abs(var - 1.0), 1.5);
  }
}

TEST(TinyImages, ClassPatternIsRecoverable) {
  // Correlating with the four patterns recovers the class far above chance.
  TinyImages data({.size = 2000, .seed = 2});
  int correct = 0;
  for (int64_t i = 0; i < data.Size(); ++i) {
    const Sample s = data.Get(i);
    int best = 0;
    double best_score = -1e300;
    for (int k = 0; k < 4; ++k) {
      double score = 0;
      for (int c = 0; c < 3; ++c) {
        for (int h = 0; h < 8; ++h) {
          for (int w = 0; w < 8; ++w) {
            score += (s.x[c * 64 + h * 8 + w] - data.config().channel_mean[c]) /
                     data.config().channel_std[c] * TinyImages::Pattern(k, h, w);
          }
        }
      }
      if (score > best_score) best_score = score, best = k;
    }
    correct += best == s.label;
  }
  EXPECT_GT(correct / 2000.0, 0.6);
}

}  // namespace
}  // namespace ddp::data
