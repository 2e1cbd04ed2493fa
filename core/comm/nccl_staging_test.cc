// What a host-buffer call costs on NCCL (Comm::staged_copies): a host buffer
// is copied to device scratch before the collective and back after it, a
// device buffer is used as it is. Two ranks (sharing a GPU when there is
// one); skips without a GPU (fails under --config=gpu).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

// The copies since `before`, "h2d calls/bytes d2h calls/bytes".
std::string Since(const Comm::StagedCopies& now, const Comm::StagedCopies& before) {
  return std::to_string(now.h2d_calls - before.h2d_calls) + "/" + std::to_string(now.h2d_bytes - before.h2d_bytes) +
         " " + std::to_string(now.d2h_calls - before.d2h_calls) + "/" +
         std::to_string(now.d2h_bytes - before.d2h_bytes);
}

TEST(NcclStaging, HostBuffersAreCopiedAndCountedDeviceBuffersAreNot) {
  DDP_SKIP_UNLESS_GPU();
  launch::SpawnOptions s;
  s.backend = "nccl";
  s.share_gpu = true;
  s.deadline = std::chrono::seconds(120);
  const auto result = launch::SpawnRanks(
      2,
      [](const launch::RankEnv& env) {
        CommOptions o = OptionsFromRankEnv(env);
        o.timeout = std::chrono::seconds(60);
        auto comm = MakeComm(o);
        std::vector<double> host(16, 1.0);
        auto before = comm->staged_copies();
        comm->Allreduce(std::span<double>(host));
        std::printf("host allreduce: %s\n", Since(comm->staged_copies(), before).c_str());
        before = comm->staged_copies();
        comm->Allgather(std::span<const double>(host));
        std::printf("host allgather: %s\n", Since(comm->staged_copies(), before).c_str());
        double* dev = nullptr;
        if (cudaMalloc(reinterpret_cast<void**>(&dev), 16 * sizeof(double)) != cudaSuccess) return 4;
        before = comm->staged_copies();
        comm->Allreduce(dev, 16, DType::kFloat64, ReduceOp::kSum);
        std::printf("device allreduce: %s\n", Since(comm->staged_copies(), before).c_str());
        cudaFree(dev);
        return host[0] == 2.0 ? 0 : 3;
      },
      s);
  ASSERT_TRUE(result.all_ok()) << result.Summary();
  for (const auto& r : result.ranks) {
    EXPECT_NE(r.stdout_text.find("host allreduce: 1/128 1/128"), std::string::npos) << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("host allgather: 1/128 1/256"), std::string::npos) << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("device allreduce: 0/0 0/0"), std::string::npos) << r.stdout_text;
  }
}

}  // namespace
}  // namespace ddp::comm
