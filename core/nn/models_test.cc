// The reference models: seeded deterministic init, norm layers swapped through
// the factory with no change to model code, and that they learn.
#include <memory>
#include <vector>

#include "core/nn/batch_norm.h"
#include "core/nn/gradcheck.h"
#include "core/nn/group_norm.h"
#include "core/nn/loss.h"
#include "core/nn/models.h"
#include "core/nn/sgd.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

using gradcheck::RandomMatrix;
using gradcheck::RandomTensor;
using gradcheck::RelErr;

TEST(Models, InitIsSeededAndPinned) {
  Mlp<double> a(MlpOptions{.in_features = 3, .hidden = 4, .seed = 1}, BatchNormFactory<double>());
  Mlp<double> b(MlpOptions{.in_features = 3, .hidden = 4, .seed = 1}, BatchNormFactory<double>());
  Mlp<double> c(MlpOptions{.in_features = 3, .hidden = 4, .seed = 2}, BatchNormFactory<double>());
  EXPECT_EQ(FlattenValues(a.Params()), FlattenValues(b.Params()));
  EXPECT_NE(FlattenValues(a.Params()), FlattenValues(c.Params()));
  // fc1.weight[0][0..1] = U(-1/sqrt(3), 1/sqrt(3)) from mt19937_64(1), computed
  // by an independent Python MT19937-64 (see rng_test.cc).
  const Matrix<double>& w = a.Params()[0].param->value;
  EXPECT_EQ(w(0, 0), -0.422762836271947);
  EXPECT_EQ(w(0, 1), -0.41984099085885973);
  // The float model holds the same draws rounded to float.
  Mlp<float> f(MlpOptions{.in_features = 3, .hidden = 4, .seed = 1}, BatchNormFactory<float>());
  EXPECT_EQ(f.Params()[0].param->value(0, 0), static_cast<float>(-0.422762836271947));
  TinyCnn<double> t1(TinyCnnOptions{.seed = 9}, BatchNormFactory<double>());
  TinyCnn<double> t2(TinyCnnOptions{.seed = 9}, GroupNormFactory<double>(4));
  // Same seed, different norm layer: same conv/linear weights (norm layers draw nothing).
  EXPECT_EQ(t1.Params()[0].param->value, t2.Params()[0].param->value);
  EXPECT_EQ(t1.Params().back().param->value, t2.Params().back().param->value);
}

TEST(Models, NormFactorySwapsLayersWithoutTouchingModelCode) {
  Rng rng(31);
  const Matrix<double> x = RandomMatrix(6, 5, rng);
  // 1) BatchNorm whose hooks count calls (where SyncBatchNorm would communicate).
  int stats_calls = 0, grad_calls = 0;
  BatchNormHooks<double> hooks{[&](const ChannelStats<double>& s) { ++stats_calls; return s; },
                               [&](const ChannelGradSums<double>& s) { ++grad_calls; return s; }};
  Mlp<double> hooked(MlpOptions{.in_features = 5, .hidden = 8, .seed = 4}, BatchNormFactory<double>({}, hooks));
  Mlp<double> plain(MlpOptions{.in_features = 5, .hidden = 8, .seed = 4}, BatchNormFactory<double>());
  const Matrix<double> y = hooked.Forward(x);
  hooked.Backward(Matrix<double>::Ones(6, 1));
  EXPECT_EQ(stats_calls, 2);  // one per norm layer
  EXPECT_EQ(grad_calls, 2);
  EXPECT_EQ(y, plain.Forward(x));  // identity hooks = plain BatchNorm
  EXPECT_NE(dynamic_cast<BatchNorm<double>*>(&hooked.norm1()), nullptr);

  // 2) GroupNorm: no batch statistics, so a sample's output does not depend
  // on the rest of the batch; with BatchNorm it does.
  Mlp<double> gn(MlpOptions{.in_features = 5, .hidden = 8, .seed = 4}, GroupNormFactory<double>(2));
  EXPECT_NE(dynamic_cast<GroupNorm<double>*>(&gn.norm2()), nullptr);
  const Matrix<double> full = gn.Forward(x);
  EXPECT_LT(RelErr(gn.Forward(x.topRows(2)), full.topRows(2)), 1e-14);
  EXPECT_GT(RelErr(plain.Forward(x.topRows(2)), plain.Forward(x).topRows(2)), 1e-3);
  // In eval mode BatchNorm uses running stats: per-sample again.
  plain.SetTraining(false);
  EXPECT_LT(RelErr(plain.Forward(x.topRows(2)), plain.Forward(x).topRows(2)), 1e-14);
}

TEST(Models, TinyCnnShapesAndNormSwap) {
  Rng rng(32);
  const Tensor4<double> x = RandomTensor(5, 3, 8, 8, rng);
  for (int gn : {0, 1}) {
    TinyCnn<double> model(TinyCnnOptions{.in_channels = 3, .width1 = 8, .width2 = 16, .num_classes = 4, .seed = 1},
                          gn ? GroupNormFactory<double>(4) : BatchNormFactory<double>());
    const Matrix<double> logits = model.Forward(x);
    EXPECT_EQ(logits.rows(), 5);
    EXPECT_EQ(logits.cols(), 4);
    const Tensor4<double> dx = model.Backward(Matrix<double>::Ones(5, 4));
    EXPECT_TRUE(dx.SameShape(x));
    EXPECT_EQ(model.Buffers().size(), gn ? 0u : 4u);
  }
}

// Gradients accumulate across backward passes (as in PyTorch), which is what
// gradient accumulation / no_sync relies on; ZeroGrads resets them.
TEST(Models, GradientsAccumulateUntilZeroed) {
  Rng rng(36);
  const Tensor4<double> x = RandomTensor(4, 3, 8, 8, rng);
  TinyCnn<double> model(TinyCnnOptions{.seed = 2}, BatchNormFactory<double>());
  const ParamList<double> params = model.Params();
  ZeroGrads(params);
  model.Forward(x);
  model.Backward(Matrix<double>::Ones(4, 4));
  const Vector<double> once = FlattenGrads(params);
  EXPECT_GT(once.norm(), 0.0);
  model.Forward(x);
  model.Backward(Matrix<double>::Ones(4, 4));
  EXPECT_LT(RelErr(FlattenGrads(params), Vector<double>(2 * once)), 1e-14);
  ZeroGrads(params);
  EXPECT_EQ(FlattenGrads(params).norm(), 0.0);
}

TEST(Models, FloatAndDoubleAgree) {
  Rng rng(33);
  const Tensor4<double> x = RandomTensor(4, 3, 8, 8, rng);
  Tensor4<float> xf(4, 3, 8, 8);
  xf.data = x.data.cast<float>();
  TinyCnn<double> d(TinyCnnOptions{.seed = 3}, BatchNormFactory<double>());
  TinyCnn<float> f(TinyCnnOptions{.seed = 3}, BatchNormFactory<float>());
  EXPECT_LT(RelErr(f.Forward(xf), d.Forward(x)), 1e-5);
}

// Toy task: the class sets which channel is brighter. A few SGD steps must
// cut the loss well down (BatchNorm and GroupNorm variants).
TEST(Models, TinyCnnLearnsToyTask) {
  for (int gn : {0, 1}) {
    SCOPED_TRACE(gn ? "GroupNorm" : "BatchNorm");
    Rng rng(34);
    constexpr int kN = 24;
    Tensor4<double> x = RandomTensor(kN, 3, 8, 8, rng, 0.5);
    std::vector<int> labels(kN);
    for (int n = 0; n < kN; ++n) {
      labels[n] = n % 3;
      Eigen::Map<Vector<double>>(x.Plane(n, labels[n]), 64).array() += 1.0;
    }
    TinyCnn<double> model(TinyCnnOptions{.num_classes = 3, .seed = 5},
                          gn ? GroupNormFactory<double>(4) : BatchNormFactory<double>());
    Sgd<double> sgd(model.Params(), SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      sgd.ZeroGrad();
      const LossAndGrad<double> l = SoftmaxCrossEntropy(model.Forward(x), std::span<const int>(labels));
      model.Backward(l.grad);
      sgd.Step();
      if (step == 0) first = l.loss;
      last = l.loss;
    }
    EXPECT_LT(last, 0.3 * first) << "first " << first << " last " << last;
  }
}

TEST(Models, MlpLearnsToyTask) {
  Rng rng(35);
  const Matrix<double> x = RandomMatrix(32, 4, rng);
  Matrix<double> t(32, 1);
  for (int n = 0; n < 32; ++n) t(n, 0) = x(n, 0) + 0.5 * x(n, 1) > 0 ? 1.0 : 0.0;
  Mlp<double> model(MlpOptions{.in_features = 4, .hidden = 16, .seed = 6}, BatchNormFactory<double>());
  Sgd<double> sgd(model.Params(), SgdOptions{.lr = 0.1, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    sgd.ZeroGrad();
    const LossAndGrad<double> l = BceWithLogits(model.Forward(x), t);
    model.Backward(l.grad);
    sgd.Step();
    if (step == 0) first = l.loss;
    last = l.loss;
  }
  EXPECT_LT(last, 0.3 * first) << "first " << first << " last " << last;
}

}  // namespace
}  // namespace ddp::nn
