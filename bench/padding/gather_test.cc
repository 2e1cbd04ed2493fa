// Every Comm-API method (the floors, pad_gather_trim, allgatherv,
// known_counts, bounded_pad, and the direct-exchange twins, switching the
// communicator's allgatherv algorithm call by call) leaves exactly the
// expected values on every rank, for every profile, on real Gloo ranks (3
// processes), run after run; in host memory and on core/device's emulated
// device (the memory and varlen kernels' arithmetic the GPU path uses:
// pad and trim by PadRows / TrimRows). Only the methods that pad or trim
// time device spans.
#include "bench/padding/gather.h"

#include <memory>

#include "bench/padding/cases.h"
#include "core/comm/make_comm.h"
#include "core/device/emulated_device.h"
#include "core/launch/spawn.h"
#include "gtest/gtest.h"

namespace ddp::bench {
namespace {

int CheckAll(const launch::RankEnv& env, bool on_device) {
  comm::CommOptions o = comm::OptionsFromRankEnv(env);
  o.backend = "gloo";
  o.timeout = std::chrono::seconds(20);
  auto comm = comm::MakeComm(o);
  auto memory = on_device ? DeviceMemoryOf(std::make_unique<device::EmulatedDevice<double>>()) : HostMemory();
  int failures = 0;
  for (Profile p : AllProfiles()) {
    for (std::int64_t n : {1, 7, 1000}) {
      const std::vector<std::int64_t> lengths = Lengths(p, env.world_size, n);
      for (Method m : Methods("gloo", env.world_size)) {
        auto g = MakeCommGather(m, *comm, *memory, lengths);
        for (int run = 0; run < 2; ++run) {
          g->Run();
          const double span_s = memory->TakeSpanSeconds();
          const bool pads = m == Method::kPadGatherTrim || m == Method::kBoundedPad;
          if (pads ? !(span_s >= 0) : span_s != 0) {
            std::fprintf(stderr, "rank %d: %s timed %g s of spans\n", env.rank, Name(m), span_s);
            ++failures;
          }
          if (comm->gloo_allgatherv() != comm::GlooAllgathervAlgorithm::kRing) {
            std::fprintf(stderr, "rank %d: %s left the algorithm switched\n", env.rank, Name(m));
            ++failures;
          }
          if (g->Output() != Expected(m, lengths)) {
            std::fprintf(stderr, "rank %d: %s %s n=%lld run %d: wrong output\n", env.rank,
                         Name(p), Name(m), static_cast<long long>(n), run);
            ++failures;
          }
        }
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

TEST(CommGather, EveryMethodEveryProfileGathersExactly) {
  launch::SpawnOptions so;
  so.deadline = std::chrono::seconds(50);
  const launch::RunResult r =
      launch::SpawnRanks(3, [](const launch::RankEnv& env) { return CheckAll(env, false); }, so);
  EXPECT_TRUE(r.all_ok()) << r.Summary();
}

TEST(CommGather, EveryMethodGathersExactlyOnTheEmulatedDevice) {
  launch::SpawnOptions so;
  so.deadline = std::chrono::seconds(50);
  const launch::RunResult r =
      launch::SpawnRanks(3, [](const launch::RankEnv& env) { return CheckAll(env, true); }, so);
  EXPECT_TRUE(r.all_ok()) << r.Summary();
}

TEST(CommGather, ExpectedIsRankOrderedAndDistinct) {
  const std::vector<std::int64_t> lengths = {2, 1};
  EXPECT_EQ(Expected(Method::kAllgatherv, lengths),
            (std::vector<double>{Value(0, 0), Value(0, 1), Value(1, 0)}));
  // The floors: two blocks of ceil(3/2) = 2.
  for (Method m : {Method::kFloorAllgather, Method::kFloorAllgatherv}) {
    EXPECT_EQ(Expected(m, lengths),
              (std::vector<double>{Value(0, 0), Value(0, 1), Value(1, 0), Value(1, 1)}));
  }
  EXPECT_NE(Value(0, 4294967296LL - 1), Value(1, 0));
}

TEST(CommGather, NcclOnlyMethodsAreRefused) {
  launch::SpawnOptions so;
  so.deadline = std::chrono::seconds(30);
  const launch::RunResult r = launch::SpawnRanks(
      1,
      [](const launch::RankEnv& env) {
        comm::CommOptions o = comm::OptionsFromRankEnv(env);
        o.backend = "gloo";
        auto comm = comm::MakeComm(o);
        auto memory = HostMemory();
        try {
          MakeCommGather(Method::kGroupedBroadcast, *comm, *memory, {4});
        } catch (const std::invalid_argument&) {
          return 0;
        }
        return 1;
      },
      so);
  EXPECT_TRUE(r.all_ok()) << r.Summary();
}

}  // namespace
}  // namespace ddp::bench
