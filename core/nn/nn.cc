// Explicit instantiations for float and double: every template in the library
// is compiled (and warning-checked) once here, whatever the tests use.
#include "core/nn/adam.h"
#include "core/nn/batch_norm.h"
#include "core/nn/conv2d.h"
#include "core/nn/global_avg_pool.h"
#include "core/nn/group_norm.h"
#include "core/nn/linear.h"
#include "core/nn/loss.h"
#include "core/nn/models.h"
#include "core/nn/relu.h"
#include "core/nn/sgd.h"

namespace ddp::nn {

template class Linear<float>;
template class Linear<double>;
template class Conv2d<float>;
template class Conv2d<double>;
template class Relu<float>;
template class Relu<double>;
template class GlobalAvgPool<float>;
template class GlobalAvgPool<double>;
template class BatchNorm<float>;
template class BatchNorm<double>;
template class GroupNorm<float>;
template class GroupNorm<double>;
template class Sgd<float>;
template class Sgd<double>;
template class Adam<float>;
template class Adam<double>;
template class Mlp<float>;
template class Mlp<double>;
template class TinyCnn<float>;
template class TinyCnn<double>;
template LossAndGrad<float> SoftmaxCrossEntropy(const Matrix<float>&, std::span<const int>);
template LossAndGrad<double> SoftmaxCrossEntropy(const Matrix<double>&, std::span<const int>);
template LossAndGrad<float> BceWithLogits(const Matrix<float>&, const Matrix<float>&);
template LossAndGrad<double> BceWithLogits(const Matrix<double>&, const Matrix<double>&);

}  // namespace ddp::nn
