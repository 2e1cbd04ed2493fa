// Forward and backward of every layer, the losses, SGD and Adam against PyTorch 1.13
// golden vectors (golden/gen_golden.py): normwise relative error < 1e-10 in
// double and < 1e-5 in float, per tensor.
#include <cstdio>
#include <string>
#include <vector>

#include "core/nn/adam.h"
#include "core/nn/batch_norm.h"
#include "core/nn/conv2d.h"
#include "core/nn/global_avg_pool.h"
#include "core/nn/golden_io.h"
#include "core/nn/gradcheck.h"
#include "core/nn/group_norm.h"
#include "core/nn/linear.h"
#include "core/nn/loss.h"
#include "core/nn/relu.h"
#include "core/nn/sgd.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

using golden::GoldenFile;

template <typename S>
struct Precision;
template <>
struct Precision<double> {
  static constexpr double kTol = 1e-10;
  static constexpr const char* kTag = "f64";
};
template <>
struct Precision<float> {
  static constexpr double kTol = 1e-5;
  static constexpr const char* kTag = "f32";
};

template <typename S>
class GoldenTest : public ::testing::Test {
 protected:
  // A parameter whose value is the golden tensor `name`.
  static Parameter<S> Golden(const GoldenFile& g, const std::string& name) {
    Parameter<S> p;
    p.value = g.AsMatrix<S>(name);
    return p;
  }

  // gen_golden.py's optimizer_case: a weight and a bias, then steps on the
  // golden gradients, each step's parameters compared; before_step(k) runs
  // first (a schedule's set_lr).
  template <typename Opt, typename BeforeStep>
  void CheckOptimizerSteps(const GoldenFile& g, Parameter<S>& weight, Parameter<S>& bias, Opt& opt, int steps,
                           BeforeStep before_step) {
    for (int step = 0; step < steps; ++step) {
      before_step(step);
      const std::string p = "step" + std::to_string(step) + ".";
      weight.grad = g.AsMatrix<S>(p + "dweight");
      bias.grad = g.AsMatrix<S>(p + "dbias");
      opt.Step();
      Expect(g, p + "weight", weight.value);
      Expect(g, p + "bias", bias.value);
    }
  }

  GoldenFile Load(const std::string& case_name) {
    file_name_ = case_name + "_" + Precision<S>::kTag + ".txt";
    return GoldenFile::Load(file_name_);
  }

  // Compares `actual` (anything with .size() and .data()) with the golden
  // tensor `name`, element for element in row-major / NCHW order.
  template <typename A>
  void Expect(const GoldenFile& g, const std::string& name, const A& actual) {
    const auto& ref = g.Get(name).values;
    const Eigen::Map<const Vector<double>> expected(ref.data(), static_cast<Eigen::Index>(ref.size()));
    const double err = gradcheck::RelErr(actual, expected);
    EXPECT_LT(err, Precision<S>::kTol) << file_name_ << ": " << name;
    std::printf("golden %-22s %-22s rel_err %.3g\n", file_name_.c_str(), name.c_str(), err);
  }

  std::string file_name_;
};

using Scalars = ::testing::Types<double, float>;
TYPED_TEST_SUITE(GoldenTest, Scalars);

TYPED_TEST(GoldenTest, Linear) {
  using S = TypeParam;
  const GoldenFile g = this->Load("linear");
  const Matrix<S> x = g.AsMatrix<S>("x");
  Linear<S> lin(static_cast<int>(x.cols()), static_cast<int>(g.Get("weight").dims[0]));
  lin.weight().value = g.AsMatrix<S>("weight");
  lin.bias().value = g.AsMatrix<S>("bias");
  this->Expect(g, "y", lin.Forward(x));
  this->Expect(g, "dx", lin.Backward(g.AsMatrix<S>("dy")));
  this->Expect(g, "dweight", lin.weight().grad);
  this->Expect(g, "dbias", lin.bias().grad);
}

TYPED_TEST(GoldenTest, Conv2d) {
  using S = TypeParam;
  for (const char* name : {"conv_k3s1p1", "conv_k3s2p1", "conv_k2s2p0"}) {
    const GoldenFile g = this->Load(name);
    const Tensor4<S> x = g.AsTensor4<S>("x");
    const Conv2dOptions opts{.kernel = static_cast<int>(g.Scalar("kernel")),
                             .stride = static_cast<int>(g.Scalar("stride")),
                             .padding = static_cast<int>(g.Scalar("padding")),
                             .bias = true};
    Conv2d<S> conv(x.c, g.Get("weight").dims[0], opts);
    conv.weight().value = g.AsMatrix<S>("weight");
    conv.bias().value = g.AsMatrix<S>("bias");
    const Tensor4<S> y = conv.Forward(x);
    EXPECT_EQ(std::vector<int>({y.n, y.c, y.h, y.w}), g.Get("y").dims);
    this->Expect(g, "y", y.data);
    this->Expect(g, "dx", conv.Backward(g.AsTensor4<S>("dy")).data);
    this->Expect(g, "dweight", conv.weight().grad);
    this->Expect(g, "dbias", conv.bias().grad);
  }
}

TYPED_TEST(GoldenTest, ReluAndPool) {
  using S = TypeParam;
  const GoldenFile r = this->Load("relu");
  Relu<S> relu;
  this->Expect(r, "y", relu.Forward(r.AsMatrix<S>("x")));
  this->Expect(r, "dx", relu.Backward(r.AsMatrix<S>("dy")));
  const GoldenFile p = this->Load("pool");
  GlobalAvgPool<S> pool;
  this->Expect(p, "y", pool.Forward(p.AsTensor4<S>("x")));
  this->Expect(p, "dx", pool.Backward(p.AsMatrix<S>("dy")).data);
}

// Three training steps (output, gradients and running stats after each), then
// eval mode with the running stats the three steps left.
TYPED_TEST(GoldenTest, BatchNormTrainThenEval) {
  using S = TypeParam;
  for (const char* name : {"bn1d", "bn2d"}) {
    const GoldenFile g = this->Load(name);
    const int channels = g.Get("weight").dims[0];
    BatchNorm<S> bn(channels, BatchNormOptions{.momentum = g.Scalar("momentum"), .eps = g.Scalar("eps")});
    bn.weight().value = g.AsMatrix<S>("weight");
    bn.bias().value = g.AsMatrix<S>("bias");
    for (const std::string step : {"train0", "train1", "train2", "eval"}) {
      bn.SetTraining(step != "eval");
      ZeroGrads(bn.Params());
      this->Expect(g, step + ".y", bn.Forward(g.AsTensor4<S>(step + ".x")).data);
      this->Expect(g, step + ".dx", bn.Backward(g.AsTensor4<S>(step + ".dy")).data);
      this->Expect(g, step + ".dweight", bn.weight().grad);
      this->Expect(g, step + ".dbias", bn.bias().grad);
      this->Expect(g, step + ".running_mean", bn.running_mean());
      this->Expect(g, step + ".running_var", bn.running_var());
    }
  }
}

TYPED_TEST(GoldenTest, GroupNorm) {
  using S = TypeParam;
  for (const char* name : {"gn2d", "gn1d"}) {
    const GoldenFile g = this->Load(name);
    GroupNorm<S> gn(g.Get("weight").dims[0], static_cast<int>(g.Scalar("groups")), g.Scalar("eps"));
    gn.weight().value = g.AsMatrix<S>("weight");
    gn.bias().value = g.AsMatrix<S>("bias");
    this->Expect(g, "y", gn.Forward(g.AsTensor4<S>("x")).data);
    this->Expect(g, "dx", gn.Backward(g.AsTensor4<S>("dy")).data);
    this->Expect(g, "dweight", gn.weight().grad);
    this->Expect(g, "dbias", gn.bias().grad);
  }
}

TYPED_TEST(GoldenTest, Losses) {
  using S = TypeParam;
  const GoldenFile ce = this->Load("cross_entropy");
  std::vector<int> labels;
  for (double v : ce.Get("labels").values) labels.push_back(static_cast<int>(v));
  const LossAndGrad<S> ce_out = SoftmaxCrossEntropy(ce.AsMatrix<S>("logits"), std::span<const int>(labels));
  this->Expect(ce, "loss", Vector<S>(Vector<S>::Constant(1, ce_out.loss)));
  this->Expect(ce, "dlogits", ce_out.grad);
  const GoldenFile bce = this->Load("bce");
  const LossAndGrad<S> bce_out = BceWithLogits(bce.AsMatrix<S>("logits"), bce.AsMatrix<S>("targets"));
  this->Expect(bce, "loss", Vector<S>(Vector<S>::Constant(1, bce_out.loss)));
  this->Expect(bce, "dlogits", bce_out.grad);
}

TYPED_TEST(GoldenTest, SgdMomentumWeightDecay) {
  using S = TypeParam;
  const GoldenFile g = this->Load("sgd");
  Parameter<S> weight = this->Golden(g, "weight"), bias = this->Golden(g, "bias");
  Sgd<S> sgd({{"weight", &weight}, {"bias", &bias}},
             SgdOptions{.lr = g.Scalar("lr"), .momentum = g.Scalar("momentum"), .weight_decay = g.Scalar("weight_decay")});
  this->CheckOptimizerSteps(g, weight, bias, sgd, 3, [](int) {});
}

// Four steps, the last at a quarter of the learning rate (a schedule's
// set_lr): the bias corrections count steps, not learning rates.
TYPED_TEST(GoldenTest, AdamWeightDecay) {
  using S = TypeParam;
  const GoldenFile g = this->Load("adam");
  Parameter<S> weight = this->Golden(g, "weight"), bias = this->Golden(g, "bias");
  Adam<S> adam({{"weight", &weight}, {"bias", &bias}},
               AdamOptions{.lr = g.Scalar("lr"), .beta1 = g.Scalar("beta1"), .beta2 = g.Scalar("beta2"),
                           .eps = g.Scalar("eps"), .weight_decay = g.Scalar("weight_decay")});
  this->CheckOptimizerSteps(g, weight, bias, adam, 4, [&](int step) {
    if (step == 3) adam.set_lr(g.Scalar("lr") / 4);
  });
  EXPECT_EQ(adam.steps(), 4);
}

}  // namespace
}  // namespace ddp::nn
