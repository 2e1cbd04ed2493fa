// Every Gloo collective against a serial reference, for W in {1, 2, 3, 4},
// in raw and checked mode, with either allgatherv algorithm (ring, direct),
// as real forked rank processes.
#include <cstdio>

#include "core/comm/make_comm.h"
#include "core/comm/testing/op_suite.h"
#include "core/launch/spawn.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

class GlooOps
    : public ::testing::TestWithParam<std::tuple<int, bool, GlooAllgathervAlgorithm>> {};

TEST_P(GlooOps, MatchSerialReference) {
  const auto [world, checked, allgatherv] = GetParam();
  launch::SpawnOptions spawn;
  spawn.deadline = std::chrono::seconds(50);
  const auto result = launch::SpawnRanks(
      world,
      [checked = checked, allgatherv = allgatherv](const launch::RankEnv& env) {
        CommOptions options = OptionsFromRankEnv(env);
        options.timeout = std::chrono::seconds(20);
        options.checked = checked;
        options.gloo_allgatherv = allgatherv;
        auto comm = MakeComm(options);
        const auto failures = testing::RunOpSuite(*comm);
        for (const auto& f : failures) std::fprintf(stderr, "MISMATCH %s\n", f.c_str());
        std::printf("rank %d ran %lld collectives\n", env.rank,
                    static_cast<long long>(comm->next_seq()));
        return failures.empty() ? 0 : 3;
      },
      spawn);
  ASSERT_TRUE(result.all_ok()) << result.Summary();
  for (const auto& r : result.ranks) {
    // 4 dtypes x (3 allgather + 4 allgatherv + 9 allreduce + W broadcast + 3
    // reduce_scatter + 1 barrier): proves the suite really ran.
    const int expected = 4 * (20 + world);
    EXPECT_NE(r.stdout_text.find("ran " + std::to_string(expected) + " collectives"),
              std::string::npos)
        << r.stdout_text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    WorldSizes, GlooOps,
    ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Bool(),
                       ::testing::Values(GlooAllgathervAlgorithm::kRing,
                                         GlooAllgathervAlgorithm::kDirect)),
    [](const auto& info) {
      return "W" + std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "_checked_" : "_raw_") + Name(std::get<2>(info.param));
    });

}  // namespace
}  // namespace ddp::comm
