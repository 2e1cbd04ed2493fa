// BatchNorm, SyncBatchNorm's local parts and GroupNorm kernels on a real GPU,
// float and double: the cases of norm_test_cases.h (against core/nn's Eigen
// implementation, and the gradient kernels against the exact value at their
// own inputs within a derived rounding bound). Errors are printed as
// "[gpu] ..." lines in the test log; norm_emulation_test prints the same
// cases run on the host as "[emulated fma] ...", which should be the same
// numbers (README.md).
#include <vector>

#include "core/cuda/device_backend.h"
#include "core/cuda/norm_test_cases.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::cuda {
namespace {

using testing::BatchNormShapes;
using testing::CaseShape;
using testing::DeviceBackend;
using testing::GroupCase;
using testing::GroupNormCases;

template <typename T>
class NormKernelsTest : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NormKernelsTest, Scalars);

TYPED_TEST(NormKernelsTest, BatchNormTrainingForwardBackwardMatchEigen) {
  DDP_SKIP_UNLESS_GPU();
  DeviceBackend b;
  for (const CaseShape& s : BatchNormShapes()) testing::BatchNormTrainingCase<DeviceBackend, TypeParam>(b, s);
}

TYPED_TEST(NormKernelsTest, BatchNormEvalMatchesEigen) {
  DDP_SKIP_UNLESS_GPU();
  DeviceBackend b;
  testing::BatchNormEvalCase<DeviceBackend, TypeParam>(b);
}

TYPED_TEST(NormKernelsTest, SyncBatchNormPartsEqualWholeBatch) {
  DDP_SKIP_UNLESS_GPU();
  DeviceBackend b;
  testing::SyncBatchNormCase<DeviceBackend, TypeParam>(b);
}

TYPED_TEST(NormKernelsTest, GroupNormForwardBackwardMatchEigen) {
  DDP_SKIP_UNLESS_GPU();
  DeviceBackend b;
  for (const GroupCase& k : GroupNormCases()) testing::GroupNormCase<DeviceBackend, TypeParam>(b, k);
}

}  // namespace
}  // namespace ddp::cuda
