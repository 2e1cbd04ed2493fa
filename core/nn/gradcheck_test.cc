// Every layer's backward (input and parameter gradients) against central
// finite differences in double: normwise relative error < 1e-6.
#include <memory>
#include <vector>

#include "core/nn/batch_norm.h"
#include "core/nn/conv2d.h"
#include "core/nn/global_avg_pool.h"
#include "core/nn/gradcheck.h"
#include "core/nn/group_norm.h"
#include "core/nn/linear.h"
#include "core/nn/loss.h"
#include "core/nn/models.h"
#include "core/nn/relu.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

using gradcheck::NumericGrad;
using gradcheck::RandomMatrix;
using gradcheck::RandomTensor;
using gradcheck::RelErr;

constexpr double kTol = 1e-6;

double Dot(const Matrix<double>& a, const Matrix<double>& b) { return a.cwiseProduct(b).sum(); }
double Dot(const Tensor4<double>& a, const Tensor4<double>& b) { return a.data.dot(b.data); }

// Checks d<y, r>/d(input) and d<y, r>/d(each parameter) for a layer whose
// Forward maps In -> Out.
template <typename Layer, typename In, typename Out>
void CheckLayer(Layer& layer, In x, const Out& r, const ParamList<double>& params) {
  ZeroGrads(params);
  layer.Forward(x);
  const In dx = layer.Backward(r);
  auto loss = [&] { return Dot(layer.Forward(x), r); };
  const Vector<double> num_dx = NumericGrad(const_cast<double*>(x.data()), x.size(), loss);
  EXPECT_LT(RelErr(dx, num_dx), kTol) << "input gradient";
  for (const auto& p : params) {
    const Matrix<double> analytic = p.param->grad;
    const Vector<double> numeric = NumericGrad(p.param->value.data(), p.param->value.size(), loss);
    EXPECT_LT(RelErr(analytic, numeric), kTol) << p.name;
  }
}

// Tensor4 has .data, not .data(); adapt with a thin view for CheckLayer.
template <typename Layer, typename Out>
void CheckLayer4(Layer& layer, Tensor4<double> x, const Out& r, const ParamList<double>& params) {
  ZeroGrads(params);
  layer.Forward(x);
  const Tensor4<double> dx = layer.Backward(r);
  auto loss = [&] { return Dot(layer.Forward(x), r); };
  const Vector<double> num_dx = NumericGrad(x.data.data(), x.data.size(), loss);
  EXPECT_LT(RelErr(dx.data, num_dx), kTol) << "input gradient";
  for (const auto& p : params) {
    const Matrix<double> analytic = p.param->grad;
    const Vector<double> numeric = NumericGrad(p.param->value.data(), p.param->value.size(), loss);
    EXPECT_LT(RelErr(analytic, numeric), kTol) << p.name;
  }
}

TEST(GradCheck, Linear) {
  Rng rng(1);
  Linear<double> lin(5, 3);
  lin.Init(rng);
  CheckLayer(lin, RandomMatrix(4, 5, rng), RandomMatrix(4, 3, rng), lin.Params());
}

TEST(GradCheck, Relu) {
  Rng rng(2);
  Relu<double> relu;
  CheckLayer(relu, RandomMatrix(4, 6, rng, 1.0, 0.0, 1e-3), RandomMatrix(4, 6, rng), ParamList<double>{});
}

TEST(GradCheck, Conv2dStridesAndPadding) {
  for (Conv2dOptions o : {Conv2dOptions{3, 1, 1, true}, Conv2dOptions{3, 2, 1, true}, Conv2dOptions{2, 2, 0, true},
                          Conv2dOptions{1, 1, 0, false}, Conv2dOptions{3, 3, 2, true}}) {
    SCOPED_TRACE(testing::Message() << "k=" << o.kernel << " s=" << o.stride << " p=" << o.padding);
    Rng rng(3);
    Conv2d<double> conv(3, 4, o);
    conv.Init(rng);
    Tensor4<double> x = RandomTensor(2, 3, 6, 5, rng);
    const Tensor4<double> y = conv.Forward(x);
    CheckLayer4(conv, x, RandomTensor(y.n, y.c, y.h, y.w, rng), conv.Params());
  }
}

TEST(GradCheck, GlobalAvgPool) {
  Rng rng(4);
  GlobalAvgPool<double> pool;
  CheckLayer4(pool, RandomTensor(2, 3, 4, 3, rng), RandomMatrix(2, 3, rng), ParamList<double>{});
}

void RandomizeAffine(NormLayer<double>& norm, Rng& rng) {
  for (const auto& p : norm.Params()) p.param->value = RandomMatrix(1, norm.channels(), rng, 0.5, 1.0);
}

TEST(GradCheck, BatchNorm2dTrainAndEval) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "train" : "eval");
    Rng rng(5);
    BatchNorm<double> bn(3);
    RandomizeAffine(bn, rng);
    // Non-trivial running stats for eval mode.
    bn.running_mean() = RandomMatrix(1, 3, rng);
    bn.running_var() = RandomMatrix(1, 3, rng, 0.3, 2.0);
    bn.SetTraining(training);
    Tensor4<double> x = RandomTensor(3, 3, 2, 3, rng, 2.0);
    CheckLayer4(bn, x, RandomTensor(3, 3, 2, 3, rng), bn.Params());
  }
}

TEST(GradCheck, BatchNorm1dTrainLargeMean) {
  Rng rng(6);
  BatchNorm<double> bn(4);
  RandomizeAffine(bn, rng);
  Matrix<double> x = RandomMatrix(5, 4, rng, 1.0, 50.0);
  CheckLayer4(bn, FromRows(x), FromRows(RandomMatrix(5, 4, rng)), bn.Params());
}

TEST(GradCheck, GroupNorm) {
  Rng rng(7);
  GroupNorm<double> gn(6, 3);
  RandomizeAffine(gn, rng);
  CheckLayer4(gn, RandomTensor(2, 6, 2, 3, rng, 2.0), RandomTensor(2, 6, 2, 3, rng), gn.Params());
  GroupNorm<double> gn1d(6, 2);
  RandomizeAffine(gn1d, rng);
  CheckLayer4(gn1d, FromRows(RandomMatrix(3, 6, rng)), FromRows(RandomMatrix(3, 6, rng)), gn1d.Params());
}

TEST(GradCheck, SoftmaxCrossEntropy) {
  Rng rng(8);
  Matrix<double> logits = RandomMatrix(5, 4, rng, 3.0);
  const std::vector<int> labels{0, 3, 1, 1, 2};
  const Matrix<double> grad = SoftmaxCrossEntropy(logits, std::span<const int>(labels)).grad;
  const Vector<double> numeric = NumericGrad(logits.data(), logits.size(), [&] {
    return SoftmaxCrossEntropy(logits, std::span<const int>(labels)).loss;
  });
  EXPECT_LT(RelErr(grad, numeric), kTol);
}

TEST(GradCheck, BceWithLogits) {
  Rng rng(9);
  Matrix<double> logits = RandomMatrix(6, 1, rng, 3.0);
  Matrix<double> targets(6, 1);
  targets << 0, 1, 1, 0, 0.25, 0.9;
  const Matrix<double> grad = BceWithLogits(logits, targets).grad;
  const Vector<double> numeric =
      NumericGrad(logits.data(), logits.size(), [&] { return BceWithLogits(logits, targets).loss; });
  EXPECT_LT(RelErr(grad, numeric), kTol);
}

// Whole models: every parameter's gradient of the training loss, through
// the norm layers' batch statistics.
TEST(GradCheck, MlpWithBatchNorm) {
  Rng rng(10);
  Mlp<double> model(MlpOptions{.in_features = 5, .hidden = 6, .seed = 3}, BatchNormFactory<double>());
  const Matrix<double> x = RandomMatrix(7, 5, rng);
  Matrix<double> t(7, 1);
  t << 0, 1, 1, 0, 1, 0, 1;
  auto loss = [&] { return BceWithLogits(model.Forward(x), t).loss; };
  const ParamList<double> params = model.Params();
  ZeroGrads(params);
  model.Backward(BceWithLogits(model.Forward(x), t).grad);
  for (const auto& p : params) {
    const Matrix<double> analytic = p.param->grad;
    EXPECT_LT(RelErr(analytic, NumericGrad(p.param->value.data(), p.param->value.size(), loss)), kTol) << p.name;
  }
}

TEST(GradCheck, TinyCnnWithBatchNormAndGroupNorm) {
  for (int use_gn : {0, 1}) {
    SCOPED_TRACE(use_gn ? "GroupNorm" : "BatchNorm");
    Rng rng(11);
    TinyCnn<double> model(TinyCnnOptions{.in_channels = 3, .width1 = 4, .width2 = 4, .num_classes = 3, .seed = 5},
                          use_gn ? GroupNormFactory<double>(2) : BatchNormFactory<double>());
    Tensor4<double> x = RandomTensor(3, 3, 5, 5, rng);
    const std::vector<int> labels{0, 2, 1};
    auto loss = [&] { return SoftmaxCrossEntropy(model.Forward(x), std::span<const int>(labels)).loss; };
    const ParamList<double> params = model.Params();
    ZeroGrads(params);
    const Tensor4<double> dx = model.Backward(SoftmaxCrossEntropy(model.Forward(x), std::span<const int>(labels)).grad);
    EXPECT_LT(RelErr(dx.data, NumericGrad(x.data.data(), x.data.size(), loss)), kTol) << "input";
    for (const auto& p : params) {
      const Matrix<double> analytic = p.param->grad;
      EXPECT_LT(RelErr(analytic, NumericGrad(p.param->value.data(), p.param->value.size(), loss)), kTol) << p.name;
    }
  }
}

}  // namespace
}  // namespace ddp::nn
