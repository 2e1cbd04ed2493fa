// Every Gloo collective against a serial reference, for W in {1, 2, 3, 4},
// in raw and checked mode, with either allgatherv algorithm (ring, direct),
// as real forked rank processes.
#include <cstdio>
#include <vector>

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

// A non-default piece size (DDP_GLOO_ALLGATHERV_PIECE_KIB's option): blocks
// of many 64 KiB pieces, one block empty, arrive whole through both
// algorithms.
TEST(GlooAllgathervPieces, SmallPiecesKeepEveryByte) {
  for (auto algorithm : {GlooAllgathervAlgorithm::kRing, GlooAllgathervAlgorithm::kDirect}) {
    launch::SpawnOptions spawn;
    spawn.deadline = std::chrono::seconds(50);
    const auto result = launch::SpawnRanks(
        3,
        [algorithm](const launch::RankEnv& env) {
          CommOptions options = OptionsFromRankEnv(env);
          options.timeout = std::chrono::seconds(20);
          options.gloo_allgatherv = algorithm;
          options.gloo_allgatherv_piece_bytes = 64 * 1024;
          auto comm = MakeComm(options);
          const std::vector<std::size_t> counts = {100000, 30001, 0};  // 800 KB: 13 pieces
          std::vector<double> mine(counts[static_cast<std::size_t>(env.rank)]);
          for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = env.rank * 1e6 + i;
          std::vector<double> out(130001, -1);
          comm->Allgatherv(mine.data(), mine.size(), out.data(), counts, DType::kFloat64);
          std::size_t bad = 0, k = 0;
          for (int r = 0; r < 3; ++r) {
            for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i, ++k) {
              bad += out[k] != r * 1e6 + i;
            }
          }
          std::printf("rank %d: %zu wrong\n", env.rank, bad);
          return bad == 0 ? 0 : 3;
        },
        spawn);
    ASSERT_TRUE(result.all_ok()) << Name(algorithm) << "\n" << result.Summary();
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
