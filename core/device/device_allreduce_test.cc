// AllreduceOnDevice on W real ranks: through a device (the emulated one on
// Gloo, the GPU in the _nccl twin) == the host all-reduce of the same
// values, bit for bit; one collective either way; on the device exactly one
// upload and one download of the buffer, of the kind asked for, and nothing
// staged by the Comm; on the host no device and (Gloo) nothing staged.
#include <cstdint>
#include <vector>

#include "core/device/device_allreduce.h"
#include "core/device/make_device.h"
#include "core/harness/world.h"
#include "core/testing/backend.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

using results::Json;

Placement TestPlacement() {
  return testing::TestBackend() == "nccl" ? Placement::kCuda : Placement::kEmulated;
}

// Values whose sum depends on the order of addition (so a different
// reduction would show), distinct per rank.
template <typename T>
std::vector<T> Values(int rank, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>((i % 3 == 0 ? 1e8 : 1.0) * (0.1 + 0.37 * rank) + 1e-3 * static_cast<double>(i));
  }
  return v;
}

// One rank: host and device all-reduces of the same values; returns the
// mismatch count, the collectives each took, the copies and the staging.
template <typename T>
Json RunOne(comm::Comm& comm, comm::ReduceOp op, CopyKind kind, std::size_t n) {
  const auto dev = MakeDevice<T>(TestPlacement());
  std::vector<T> on_host = Values<T>(comm.rank(), n), on_device = on_host;
  int64_t seq = comm.next_seq();
  const comm::Comm::StagedCopies staged0 = comm.staged_copies();
  AllreduceOnDevice<T>(comm, nullptr, on_host, kind, op);
  const int64_t host_collectives = comm.next_seq() - seq;
  const comm::Comm::StagedCopies staged1 = comm.staged_copies();
  seq = comm.next_seq();
  const CopyCount before = dev->copies();
  AllreduceOnDevice<T>(comm, dev.get(), on_device, kind, op);
  const CopyCount copies = dev->copies() - before;
  const comm::Comm::StagedCopies staged2 = comm.staged_copies();
  Json r = Json::object();
  r["host_collectives"] = host_collectives;
  r["device_collectives"] = comm.next_seq() - seq;
  int64_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) differ += on_host[i] != on_device[i];
  r["differ"] = differ;
  r["host_sum0"] = static_cast<double>(on_host[0]);
  const int k = static_cast<int>(kind);
  r["h2d_calls"] = copies.h2d[k].calls;
  r["h2d_bytes"] = copies.h2d[k].bytes;
  r["d2h_calls"] = copies.d2h[k].calls;
  r["d2h_bytes"] = copies.d2h[k].bytes;
  r["all_h2d_calls"] = copies.H2d().calls;
  r["all_d2h_calls"] = copies.D2h().calls;
  r["host_staged_h2d"] = staged1.h2d_calls - staged0.h2d_calls;
  r["device_staged"] = (staged2.h2d_calls - staged1.h2d_calls) + (staged2.d2h_calls - staged1.d2h_calls);
  return r;
}

struct Case {
  bool f32;
  comm::ReduceOp op;
  CopyKind kind;
  std::size_t n;
};

class DeviceAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(DeviceAllreduce, SameBitsOneCollectiveCopiesCounted) {
  DDP_REQUIRE_BACKEND();
  const int w = GetParam();
  const std::vector<Case> cases = {{false, comm::ReduceOp::kSum, CopyKind::kParameter, 1000},
                                   {true, comm::ReduceOp::kSum, CopyKind::kParameter, 257},
                                   {false, comm::ReduceOp::kMax, CopyKind::kStatistic, 3},
                                   {false, comm::ReduceOp::kSum, CopyKind::kStatistic, 1}};
  harness::WorldOptions o;
  o.world_size = w;
  o.backend = testing::TestBackend();
  o.timeout_s = 30;
  const auto world = harness::RunWorld(o, [&](comm::Comm& comm) {
    Json all = Json::array();
    for (const Case& c : cases) {
      all.push_back(c.f32 ? RunOne<float>(comm, c.op, c.kind, c.n) : RunOne<double>(comm, c.op, c.kind, c.n));
    }
    return all;
  });
  ASSERT_TRUE(world.ok) << world.failure;
  for (int rank = 0; rank < w; ++rank) {
    const Json& got = world.rank_values[rank];
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Json& r = got.at(i);
      const Case& c = cases[i];
      const int64_t bytes = static_cast<int64_t>(c.n * (c.f32 ? 4 : 8));
      SCOPED_TRACE("W=" + std::to_string(w) + " rank " + std::to_string(rank) + " case " + std::to_string(i));
      EXPECT_EQ(r.at("differ").get<int64_t>(), 0);
      EXPECT_EQ(r.at("host_collectives").get<int64_t>(), 1);
      EXPECT_EQ(r.at("device_collectives").get<int64_t>(), 1);
      EXPECT_EQ(r.at("h2d_calls").get<int64_t>(), 1);
      EXPECT_EQ(r.at("h2d_bytes").get<int64_t>(), bytes);
      EXPECT_EQ(r.at("d2h_calls").get<int64_t>(), 1);
      EXPECT_EQ(r.at("d2h_bytes").get<int64_t>(), bytes);
      EXPECT_EQ(r.at("all_h2d_calls").get<int64_t>(), 1);  // nothing of another kind
      EXPECT_EQ(r.at("all_d2h_calls").get<int64_t>(), 1);
      EXPECT_EQ(r.at("device_staged").get<int64_t>(), 0);  // a device buffer: the Comm stages nothing
      // The host all-reduce is staged only under NCCL.
      EXPECT_EQ(r.at("host_staged_h2d").get<int64_t>(), testing::TestBackend() == "nccl" ? 1 : 0);
    }
    // The result is the reduction, not the input: element 0 summed over ranks.
    double want = 0;
    for (int q = 0; q < w; ++q) want += Values<double>(q, 1)[0];
    EXPECT_NEAR(got.at(0).at("host_sum0").get<double>(), want, 1e-12 * want);  // any order of addition
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, DeviceAllreduce, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace ddp::device
