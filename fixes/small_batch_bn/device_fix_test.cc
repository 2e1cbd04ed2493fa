// The fixes with the ranks' norm layers on a device (issue 43): the same
// per-step check as fix_test, the same one-process Eigen reference and
// tolerance, with SyncBN / BN / GroupNorm computing on the emulated device
// (Gloo; the kernels' arithmetic on the host) or the GPU (the _nccl twin,
// --norm_device auto). Each record says where the layers ran and carries,
// per rank, the copies of one training step, which for the digits TinyCnn
// are known exactly: asserted here. The same device carries DDP's gradient
// all-reduce (AverageGradients: core/device/device_allreduce.h), so on a
// device that all-reduce adds one parameter upload and one download of the
// flat gradient (W > 1) and the Comm stages nothing for it. The default host
// run records what it did too.
#include <string>
#include <vector>

#include "core/nn/param.h"
#include "core/testing/backend.h"
#include "fixes/small_batch_bn/fix_run.h"
#include "gtest/gtest.h"
#include "repro/small_batch_bn/task.h"

namespace ddp::small_batch_bn {
namespace {

using results::Dump;
using results::Find;
using results::Json;

bool OnNccl() { return testing::TestBackend() == "nccl"; }

std::vector<results::Record> RunOn(const std::vector<int>& batches, device::Placement placement) {
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.timeout = 60;
  FixOptions o;
  o.batches = batches;
  o.steps = 3;
  o.precise_batches = 2;
  o.placement = placement;
  return RunFix(f, o);
}

int64_t Get(const Json& copies, const char* kind, const char* dir, const char* what) {
  const Json& k = kind[0] ? copies.at(kind) : copies;
  return k.at(dir).at(what).get<int64_t>();
}

// The digits TinyCnn's norm layers: 8 channels of 8 x 8, then 16 of 4 x 4.
constexpr int64_t kC1 = 8, kC2 = 16, kValuesPerSample = kC1 * 64 + kC2 * 16;

// The digits TinyCnn's flat gradient and buffers, in bytes (double), from
// the model itself: gradient 1442 values (conv1 72, norms 2 x (8 + 16),
// conv2 1152, linear 170) = 11536 B; BN buffers 48 values = 384 B.
int64_t GradBytes(NormKind kind) { return nn::NumElements(Model(Task::kDigits, kind, 0, nullptr).Params()) * 8; }
int64_t BufferBytes() { return nn::NumElements(Model(Task::kDigits, NormKind::kBatchNorm, 0, nullptr).Buffers()) * 8; }
NormKind KindOf(const results::Record& rec) {
  return rec.variant == "group_norm" ? NormKind::kGroupNorm : NormKind::kBatchNorm;
}

// What one training step of rank r must copy (double), by fix.
void ExpectStepCopies(const results::Record& rec, int rank, int batch, int world) {
  const Json& k = rec.measured.at("device_copies").at(rank);
  const std::string at = rec.variant + " rank " + std::to_string(rank) + ": " + Dump(k);
  const bool runs = batch > 0 || rec.variant != "precise_bn";  // per-rank BN skips an empty batch
  // x and dy up, y and dx down, per layer; none for an empty batch.
  const int64_t act_calls = batch > 0 ? 4 : 0, act_bytes = 2 * batch * kValuesPerSample * 8;
  EXPECT_EQ(Get(k, "activation", "h2d", "calls"), act_calls) << at;
  EXPECT_EQ(Get(k, "activation", "h2d", "bytes"), act_bytes) << at;
  EXPECT_EQ(Get(k, "activation", "d2h", "calls"), act_calls) << at;
  EXPECT_EQ(Get(k, "activation", "d2h", "bytes"), act_bytes) << at;
  const bool bn = rec.variant != "group_norm";
  // BN: gamma, beta, running stats and the count up; running stats and the
  // gradient sums down. GroupNorm: gamma, beta up; dgamma, dbeta down.
  const int64_t up = bn ? (4 * kC1 + 1 + 4 * kC2 + 1) * 8 : 2 * (kC1 + kC2) * 8;
  const int64_t down = bn ? 4 * (kC1 + kC2) * 8 : 2 * (kC1 + kC2) * 8;
  // DDP's gradient all-reduce on the device (W > 1; every rank, an empty one
  // too, which joins with zeros): the flat gradient up once and down once.
  // E.g. W = 4 x 2, sync_bn: parameter up 2 + 1 calls, 784 + 11536 B; down
  // 4 + 1 calls, 768 + 11536 B. W = 1 has no all-reduce: nothing added.
  const int64_t ar_calls = world > 1 ? 1 : 0, ar_bytes = world > 1 ? GradBytes(KindOf(rec)) : 0;
  EXPECT_EQ(Get(k, "parameter", "h2d", "calls"), (runs ? 2 : 0) + ar_calls) << at;
  EXPECT_EQ(Get(k, "parameter", "h2d", "bytes"), (runs ? up : 0) + ar_bytes) << at;
  EXPECT_EQ(Get(k, "parameter", "d2h", "calls"), (runs ? (bn ? 4 : 2) : 0) + ar_calls) << at;
  EXPECT_EQ(Get(k, "parameter", "d2h", "bytes"), (runs ? down : 0) + ar_bytes) << at;
  // SyncBN: each layer downloads the W gathered counts.
  const bool sync = rec.variant == "sync_bn";
  EXPECT_EQ(Get(k, "statistic", "d2h", "calls"), sync ? 2 : 0) << at;
  EXPECT_EQ(Get(k, "statistic", "d2h", "bytes"), sync ? 2 * world * 8 : 0) << at;
  EXPECT_EQ(Get(k, "statistic", "h2d", "calls"), 0) << at;
}

// What the Comm staged for host buffers in that step: nothing on Gloo; on
// NCCL, DDP's host-buffer collectives: the buffer broadcasts of the BN fixes
// (sync_bn 1, precise_bn 2, group_norm 0, each 384 B) and, only when the
// layers run on the host, the gradient all-reduce (11536 B; on a device it
// runs on a device buffer: 0). Not one byte for SyncBN's collectives, which
// run on device buffers. E.g. W = 4 x 2 on the GPU: sync_bn 1 call, 384 B
// each way (before the gradient moved: 2 calls, 11920 B); group_norm 0.
void ExpectStaging(const results::Record& rec, int rank, int world) {
  const Json& s = rec.measured.at("comm_staging").at(rank);
  const std::string at = rec.variant + " rank " + std::to_string(rank) + ": " + Dump(s);
  int64_t calls = 0, bytes = 0;
  if (OnNccl() && world > 1) {
    const bool grads_on_host = rec.config.at("norm_device") == "host";
    const int broadcasts = rec.variant == "sync_bn" ? 1 : rec.variant == "precise_bn" ? 2 : 0;
    calls = (grads_on_host ? 1 : 0) + broadcasts;
    bytes = (grads_on_host ? GradBytes(KindOf(rec)) : 0) + broadcasts * BufferBytes();
  }
  for (const char* dir : {"h2d", "d2h"}) {
    EXPECT_EQ(Get(s, "", dir, "calls"), calls) << at;
    EXPECT_EQ(Get(s, "", dir, "bytes"), bytes) << at;
  }
}

class DeviceFix : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(DeviceFix, EveryFixIsExactPerStepOnTheDevice) {
  DDP_REQUIRE_BACKEND();
  const std::vector<int>& batches = GetParam();
  const int w = static_cast<int>(batches.size());
  const auto placement = OnNccl() ? device::Placement::kAuto : device::Placement::kEmulated;
  const auto records = RunOn(batches, placement);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    ASSERT_NE(r.verdict, results::Verdict::kError) << r.error;
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << r.variant << " " << Dump(r.measured);
    EXPECT_LE(r.measured.at("worst_rel_err").get<double>(), 1e-12) << r.variant;
    EXPECT_EQ(r.config.at("norm_device"), OnNccl() ? "cuda" : "emulated");
    EXPECT_NE(Find(r.reference, "tolerance_basis"), nullptr);
    ASSERT_EQ(r.measured.at("device_copies").size(), static_cast<std::size_t>(w)) << Dump(r.measured);
    for (int rank = 0; rank < w; ++rank) {
      ExpectStepCopies(r, rank, batches[rank], w);
      ExpectStaging(r, rank, w);
    }
  }
  std::printf("batches %zu ranks: worst %s %.3g, %s %.3g, %s %.3g\n", batches.size(), records[0].variant.c_str(),
              records[0].measured.at("worst_rel_err").get<double>(), records[1].variant.c_str(),
              records[1].measured.at("worst_rel_err").get<double>(), records[2].variant.c_str(),
              records[2].measured.at("worst_rel_err").get<double>());
}

INSTANTIATE_TEST_SUITE_P(Worlds, DeviceFix,
                         ::testing::Values(std::vector<int>{3},               // W=1
                                           std::vector<int>{2, 6},            // W=2, uneven
                                           std::vector<int>{1, 3, 0, 5}));    // W=4, an empty rank

// On the host (--norm_device host; the default on Gloo) the records say so,
// carry no device copies, and the Comm staged nothing on Gloo.
TEST(HostFix, RecordsWhereTheLayersRan) {
  DDP_REQUIRE_BACKEND();
  const auto records = RunOn({2, 2}, device::Placement::kHost);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r.verdict, results::Verdict::kExact) << r.error;
    EXPECT_EQ(r.config.at("norm_device"), "host");
    EXPECT_EQ(Find(r.measured, "device_copies"), nullptr);
    EXPECT_EQ(Find(r.reference, "tolerance_basis"), nullptr);
    if (!OnNccl()) {
      for (int rank = 0; rank < 2; ++rank) ExpectStaging(r, rank, 2);
    }
  }
}

}  // namespace
}  // namespace ddp::small_batch_bn
