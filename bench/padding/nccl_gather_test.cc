// The NCCL methods, on device memory: every method (Comm API and raw NCCL)
// leaves exactly the expected values on every rank. Two ranks share one GPU
// when only one is visible (functional, not a performance setup).
#include "bench/padding/nccl_gather.h"

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::bench {
namespace {

int CheckAll(const launch::RankEnv& env) {
  const int device = SelectGpu(env);
  comm::CommOptions o = comm::OptionsFromRankEnv(env);
  o.backend = "nccl";
  o.timeout = std::chrono::seconds(60);
  o.share_gpu = env.share_gpu;
  auto comm = comm::MakeComm(o);
  auto memory = DeviceMemory(device);
  auto nccl = ConnectRawNccl(env, device, 60000);
  int failures = 0;
  for (Profile p : {Profile::kEqual, Profile::kStraggler, Profile::kHeavyTailed}) {
    const std::vector<std::int64_t> lengths = Lengths(p, env.world_size, 1000);
    for (Method m : {Method::kFloorAllgather, Method::kFloorAllgatherv, Method::kPadGatherTrim,
                     Method::kAllgatherv, Method::kKnownCounts, Method::kBoundedPad,
                     Method::kGroupedBroadcast, Method::kGroupedSendRecv}) {
      const bool raw = m == Method::kGroupedBroadcast || m == Method::kGroupedSendRecv;
      auto g = raw ? MakeNcclGather(m, nccl, *memory, lengths)
                   : MakeCommGather(m, *comm, *memory, lengths);
      for (int run = 0; run < 2; ++run) {
        g->Run();
        if (g->Output() != Expected(m, lengths)) {
          std::fprintf(stderr, "rank %d: %s %s run %d: wrong output\n", env.rank, Name(p),
                       Name(m), run);
          ++failures;
        }
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

TEST(NcclGather, EveryMethodGathersExactly) {
  DDP_SKIP_UNLESS_GPU();
  std::string reason;
  const int gpus = testing::VisibleGpus(&reason);
  launch::SpawnOptions so;
  so.deadline = std::chrono::seconds(120);
  so.share_gpu = gpus < 2;
  const launch::RunResult r = launch::SpawnRanks(2, CheckAll, so);
  EXPECT_TRUE(r.all_ok()) << r.Summary();
}

}  // namespace
}  // namespace ddp::bench
