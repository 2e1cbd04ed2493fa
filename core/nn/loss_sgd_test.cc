// Loss edge cases (bad input, extreme logits) and SGD's update rule by hand.
#include <cmath>
#include <vector>

#include "core/nn/loss.h"
#include "core/nn/sgd.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

TEST(Loss, CrossEntropyRejectsBadInput) {
  const Matrix<double> logits = Matrix<double>::Zero(2, 3);
  const std::vector<int> ok{0, 2}, out_of_range{0, 3}, too_few{1};
  EXPECT_NO_THROW(SoftmaxCrossEntropy(logits, std::span<const int>(ok)));
  EXPECT_THROW(SoftmaxCrossEntropy(logits, std::span<const int>(out_of_range)), std::invalid_argument);
  EXPECT_THROW(SoftmaxCrossEntropy(logits, std::span<const int>(too_few)), std::invalid_argument);
  EXPECT_THROW(SoftmaxCrossEntropy(Matrix<double>(0, 3), std::span<const int>()), std::invalid_argument);
  // Uniform logits: loss log(K), gradient (1/K - onehot) / N.
  const LossAndGrad<double> l = SoftmaxCrossEntropy(logits, std::span<const int>(ok));
  EXPECT_DOUBLE_EQ(l.loss, std::log(3.0));
  EXPECT_DOUBLE_EQ(l.grad(1, 2), (1.0 / 3 - 1) / 2);
}

TEST(Loss, CrossEntropyStableForHugeLogits) {
  Matrix<double> logits(2, 2);
  logits << 1000, 0, 1000, 0;
  const std::vector<int> labels{0, 1};
  const LossAndGrad<double> l = SoftmaxCrossEntropy(logits, std::span<const int>(labels));
  EXPECT_DOUBLE_EQ(l.loss, 500.0);  // (0 + 1000) / 2
  EXPECT_TRUE(l.grad.allFinite());
  EXPECT_DOUBLE_EQ(l.grad(1, 1), -0.5);
}

TEST(Loss, BceStableForHugeLogitsAndChecksTargets) {
  Matrix<double> z(2, 1), t(2, 1);
  z << 100, -100;
  t << 0, 1;
  const LossAndGrad<double> l = BceWithLogits(z, t);
  EXPECT_NEAR(l.loss, 100.0, 1e-12);
  EXPECT_DOUBLE_EQ(l.grad(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(l.grad(1, 0), -0.5);
  t(0, 0) = 1.5;
  EXPECT_THROW(BceWithLogits(z, t), std::invalid_argument);
  EXPECT_THROW(BceWithLogits(z, Matrix<double>(Matrix<double>::Zero(1, 2))), std::invalid_argument);
}

// p = 1, g = 0.5, lr 0.1, momentum 0.9, wd 0.1:
// step 1: d = 0.5 + 0.1 = 0.6, buf = 0.6, p = 1 - 0.06 = 0.94
// step 2: d = 0.5 + 0.094 = 0.594, buf = 0.54 + 0.594 = 1.134, p = 0.94 - 0.1134 = 0.8266
TEST(Sgd, MomentumAndWeightDecayByHand) {
  Parameter<double> p(1, 1);
  p.value(0, 0) = 1.0;
  Sgd<double> sgd({{"p", &p}}, SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
  p.grad(0, 0) = 0.5;
  sgd.Step();
  EXPECT_NEAR(p.value(0, 0), 0.94, 1e-15);
  sgd.Step();
  EXPECT_NEAR(p.value(0, 0), 0.8266, 1e-15);
  sgd.ZeroGrad();
  EXPECT_EQ(p.grad(0, 0), 0.0);
}

// A second optimizer that loads the first one's momentum takes the same
// next step (the per-step exactness checks copy optimizer state this way).
TEST(Sgd, MomentumRoundTrip) {
  Parameter<double> a(2, 3), b(2, 3);
  a.grad.setConstant(0.25);
  Sgd<double> sa({{"a", &a}}, SgdOptions{.lr = 0.1, .momentum = 0.9});
  Sgd<double> sb({{"b", &b}}, SgdOptions{.lr = 0.1, .momentum = 0.9});
  EXPECT_EQ(sa.FlattenMomentum().size(), 0);
  sa.Step();
  a.grad(1, 2) = -1.0;
  sa.Step();
  const Vector<double> m = sa.FlattenMomentum();
  ASSERT_EQ(m.size(), 6);
  EXPECT_DOUBLE_EQ(m(5), 0.9 * 0.25 - 1.0);  // row-major, as the parameters flatten
  sb.LoadMomentum(m);
  b.value = a.value;
  b.grad = a.grad;
  sa.Step();
  sb.Step();
  EXPECT_EQ(a.value, b.value);
  EXPECT_THROW(sb.LoadMomentum(Vector<double>::Zero(5)), std::invalid_argument);
  sb.LoadMomentum(Vector<double>());  // back to "no step taken"
  EXPECT_EQ(sb.FlattenMomentum().size(), 0);
}

TEST(Sgd, PlainStepAndBadOptions) {
  Parameter<float> p(1, 2);
  p.grad << 1.0f, -2.0f;
  Sgd<float> sgd({{"p", &p}}, SgdOptions{.lr = 0.5});
  sgd.Step();
  sgd.Step();  // no momentum: the same step twice
  EXPECT_EQ(p.value(0, 0), -1.0f);
  EXPECT_EQ(p.value(0, 1), 2.0f);
  EXPECT_THROW(Sgd<float>({}, SgdOptions{.lr = -1}), std::invalid_argument);
  EXPECT_THROW(Sgd<float>({}, SgdOptions{.lr = 0.1, .momentum = -0.5}), std::invalid_argument);
}

// What a per-step exactness check relies on: an optimizer that adopts
// another's momentum buffers (and learning rate) takes the same next step.
TEST(Sgd, AdoptedMomentumAndLrGiveTheSameStep) {
  Parameter<double> a(1, 2), b(1, 2);
  a.value << 1.0, -2.0;
  a.grad << 0.5, 0.25;
  Sgd<double> sa({{"p", &a}}, SgdOptions{.lr = 0.1, .momentum = 0.9});
  sa.Step();
  sa.Step();
  b.value = a.value;
  b.grad = a.grad;
  Sgd<double> sb({{"p", &b}}, SgdOptions{.lr = 0.5, .momentum = 0.9});
  sb.LoadMomentum(sa.FlattenMomentum());
  sb.set_lr(sa.lr());
  sa.Step();
  sb.Step();
  EXPECT_EQ(a.value, b.value);
  EXPECT_THROW(sb.set_lr(-1), std::invalid_argument);
  EXPECT_THROW(sb.LoadMomentum(Vector<double>::Zero(1)), std::invalid_argument);
}

}  // namespace
}  // namespace ddp::nn
