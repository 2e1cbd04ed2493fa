// The parameter container and its flat views.
#include "core/nn/models.h"
#include "core/nn/batch_norm.h"
#include "core/nn/param.h"
#include "gtest/gtest.h"

namespace ddp::nn {
namespace {

TEST(Param, FlattenUnflattenRoundTripInListOrder) {
  Parameter<double> a(2, 3), b(1, 2);
  for (int i = 0; i < 6; ++i) a.grad.data()[i] = i;
  b.grad << 10, 11;
  const ParamList<double> list{{"a", &a}, {"b", &b}};
  EXPECT_EQ(NumElements(list), 8);
  Vector<double> flat = FlattenGrads(list);
  ASSERT_EQ(flat.size(), 8);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(flat[i], i);  // row-major order of a
  EXPECT_EQ(flat[6], 10);
  EXPECT_EQ(flat[7], 11);
  flat *= 0.5;  // what gradient averaging over two ranks does
  UnflattenGrads(flat, list);
  EXPECT_EQ(a.grad(1, 2), 2.5);
  EXPECT_EQ(b.grad(0, 1), 5.5);
  EXPECT_EQ(a.value.sum(), 0.0);  // values untouched
  UnflattenValues(flat, list);
  EXPECT_EQ(FlattenValues(list), flat);
  ZeroGrads(list);
  EXPECT_EQ(FlattenGrads(list).squaredNorm(), 0.0);
}

TEST(Param, UnflattenRejectsWrongSize) {
  Parameter<float> a(2, 2);
  const ParamList<float> list{{"a", &a}};
  EXPECT_THROW(UnflattenGrads(Vector<float>(3), list), std::invalid_argument);
  EXPECT_THROW(UnflattenValues(Vector<float>(5), list), std::invalid_argument);
}

TEST(Param, ModelListsAreNamedAndOrdered) {
  Mlp<double> mlp(MlpOptions{.in_features = 3, .hidden = 4, .seed = 1}, BatchNormFactory<double>());
  const ParamList<double> params = mlp.Params();
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "norm1.weight", "norm1.bias", "fc2.weight",
                                             "fc2.bias", "norm2.weight", "norm2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(NumElements(params), 3 * 4 + 4 + 4 + 4 + 4 * 4 + 4 + 4 + 4 + 4 + 1);
  const BufferList<double> buffers = mlp.Buffers();
  ASSERT_EQ(buffers.size(), 4u);
  EXPECT_EQ(buffers[0].name, "norm1.running_mean");
  EXPECT_EQ(buffers[3].name, "norm2.running_var");
  // Buffers flatten too (DDP broadcasts them from rank 0).
  Vector<double> flat = FlattenBuffers(buffers);
  EXPECT_EQ(flat.size(), 16);
  EXPECT_EQ(flat.segment(4, 4), Vector<double>::Ones(4));  // running_var starts at 1
  flat.setConstant(2.0);
  UnflattenBuffers(flat, buffers);
  EXPECT_EQ(static_cast<BatchNorm<double>&>(mlp.norm2()).running_mean()(0, 3), 2.0);
}

}  // namespace
}  // namespace ddp::nn
