// The SyncBatchNorm timed by norm_peer computes what one BatchNorm over the
// whole batch computes: 3 Gloo ranks holding 2, 3 and 1 samples; outputs,
// input gradients and summed parameter gradients against the one-process
// layer, double to 1e-10 relative (normwise), float to 1e-5.
#include "bench/peers/sync_hooks.h"

#include <cmath>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/nn/rng.h"
#include "gtest/gtest.h"

namespace ddp::bench {
namespace {

constexpr int kC = 4;
constexpr int kHw = 3;
const int kCounts[] = {2, 3, 1};

template <typename S>
nn::Tensor4<S> Slice(const nn::Tensor4<S>& t, int from, int n) {
  nn::Tensor4<S> out(n, t.c, t.h, t.w);
  for (int i = 0; i < out.Size(); ++i) out.data[i] = t.data[from * t.c * t.h * t.w + i];
  return out;
}

template <typename S>
double NormwiseError(const nn::Vector<S>& a, const nn::Vector<S>& b) {
  return static_cast<double>((a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff());
}

template <typename S>
int Check(const launch::RankEnv& env, double tol) {
  comm::CommOptions o = comm::OptionsFromRankEnv(env);
  o.backend = "gloo";
  o.timeout = std::chrono::seconds(20);
  auto comm = comm::MakeComm(o);
  int total = 0;
  for (int c : kCounts) total += c;
  nn::Rng rng(7);
  nn::Tensor4<S> x(total, kC, kHw, kHw), dy(total, kC, kHw, kHw);
  for (int i = 0; i < x.Size(); ++i) x.data[i] = static_cast<S>(rng.Normal(3, 2));
  for (int i = 0; i < dy.Size(); ++i) dy.data[i] = static_cast<S>(rng.Normal());
  nn::BatchNorm<S> whole(kC);
  const nn::Tensor4<S> y_ref = whole.Forward(x);
  const nn::Tensor4<S> dx_ref = whole.Backward(dy);

  int from = 0;
  for (int r = 0; r < env.rank; ++r) from += kCounts[r];
  const int n = kCounts[env.rank];
  nn::BatchNorm<S> mine(kC, nn::BatchNormOptions{}, SyncBatchNormHooks<S>(*comm));
  const nn::Tensor4<S> y = mine.Forward(Slice(x, from, n));
  const nn::Tensor4<S> dx = mine.Backward(Slice(dy, from, n));
  // Parameter gradients are local (DDP averages them later): their sum over
  // ranks is the whole batch's.
  std::vector<S> grads;
  for (const auto& p : mine.Params()) {
    for (int i = 0; i < p.param->grad.size(); ++i) grads.push_back(p.param->grad.data()[i]);
  }
  comm->Allreduce<S>(grads);
  std::vector<S> grads_ref;
  for (const auto& p : whole.Params()) {
    for (int i = 0; i < p.param->grad.size(); ++i) grads_ref.push_back(p.param->grad.data()[i]);
  }
  const double ey = NormwiseError<S>(y.data, Slice(y_ref, from, n).data);
  const double edx = NormwiseError<S>(dx.data, Slice(dx_ref, from, n).data);
  const double eg = NormwiseError<S>(Eigen::Map<nn::Vector<S>>(grads.data(), grads.size()),
                                     Eigen::Map<nn::Vector<S>>(grads_ref.data(), grads_ref.size()));
  std::printf("rank %d: y %.3g dx %.3g grads %.3g (tolerance %.0e)\n", env.rank, ey, edx, eg,
              tol);
  return ey < tol && edx < tol && eg < tol ? 0 : 1;
}

TEST(SyncBatchNormHooks, EqualOneBatchNormOverTheWholeBatchDouble) {
  const auto r = launch::SpawnRanks(3, [](const launch::RankEnv& e) { return Check<double>(e, 1e-10); });
  EXPECT_TRUE(r.all_ok()) << r.Summary();
  for (const auto& rank : r.ranks) std::printf("%s", rank.stdout_text.c_str());
}

TEST(SyncBatchNormHooks, EqualOneBatchNormOverTheWholeBatchFloat) {
  const auto r = launch::SpawnRanks(3, [](const launch::RankEnv& e) { return Check<float>(e, 1e-5); });
  EXPECT_TRUE(r.all_ok()) << r.Summary();
  for (const auto& rank : r.ranks) std::printf("%s", rank.stdout_text.c_str());
}

}  // namespace
}  // namespace ddp::bench
