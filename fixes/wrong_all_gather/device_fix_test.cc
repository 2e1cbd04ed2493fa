// The gathers with pad / trim / reorder on a device (issue 43): the emulated
// device on Gloo (host memory standing in for device memory, real Gloo
// ranks), the GPU in the _nccl twin (--gather_device auto = cuda). Every
// method and sharding must give the one-process AUC and AP as exactly as the
// host gather does (the rows are copied, never computed on, so the
// predictions downloaded are the host path's, bit for bit), and each rank's
// copies for one gather are known exactly:
//   prediction h2d: 1 call of n_local x 3 doubles (none for an empty share);
//   prediction d2h: 1 call of N x 3 doubles (the gathered, ordered result);
//   statistic  d2h: 1 call of 16 bytes (ReorderByIndex's coverage check);
//   nothing else (activation, parameter: 0).
// And what the Comm staged in that gather (comm_staging): nothing on Gloo;
// on NCCL the host int64 lengths exchange of pad_gather_trim and allgatherv,
// 1 call of 8 bytes up and 1 of 8 W bytes down (as nccl_staging_test's host
// all_gather), nothing for known_counts.
#include <algorithm>
#include <string>
#include <vector>

#include "core/testing/backend.h"
#include "fixes/wrong_all_gather/fix_run.h"
#include "fixes/wrong_all_gather/gather.h"
#include "gtest/gtest.h"

namespace ddp::wrong_all_gather {
namespace {

using results::Dump;
using results::Json;

bool OnNccl() { return testing::TestBackend() == "nccl"; }

int64_t Get(const Json& copies, const char* kind, const char* dir, const char* what) {
  return copies.at(kind).at(dir).at(what).get<int64_t>();
}
int64_t Get(const Json& staged, const char* dir, const char* what) { return staged.at(dir).at(what).get<int64_t>(); }

Sharding ShardingOf(const results::Record& r) {
  return r.config.at("sharding").get<std::string>() == "strided" ? Sharding::kStrided : Sharding::kPaddedSampler;
}

TEST(WrongAllGatherDeviceFix, ExactWithKnownCopiesOnTheDevice) {
  DDP_REQUIRE_BACKEND();
  harness::CommonFlags f;
  f.backend = testing::TestBackend();
  f.timeout = 30;
  std::vector<Row> rows;
  for (int w : {1, 3, 4}) {
    for (int64_t n : {2, 7, 1003}) {
      Row r;
      r.n = n;
      r.world_size = w;
      r.batch_size = 7;
      r.seeds = 2;
      r.first_seed = 7;
      rows.push_back(r);
    }
  }
  const device::Placement placement = OnNccl() ? device::Placement::kAuto : device::Placement::kEmulated;
  const auto records = RunFixOnRows(f, rows, placement);
  const auto host = RunFixOnRows(f, rows, device::Placement::kHost);
  ASSERT_EQ(records.size(), rows.size() * 6);
  ASSERT_EQ(host.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const results::Record& r = records[i];
    const std::string at = r.variant + " W=" + std::to_string(r.world_size) + " " + Dump(r.config);
    ASSERT_EQ(r.verdict, results::Verdict::kExact) << at << " " << Dump(r.measured) << " " << r.error;
    EXPECT_EQ(r.config.at("gather_device"), OnNccl() ? "cuda" : "emulated") << at;
    EXPECT_EQ(host[i].config.at("gather_device"), "host");
    EXPECT_EQ(host[i].measured.find("device_copies"), host[i].measured.end()) << "the host gather copies nothing";
    EXPECT_EQ(host[i].measured.contains("comm_staging"), OnNccl()) << "staging is recorded on NCCL only";
    // The same AUC as the host gather, to the bit (the same predictions).
    EXPECT_EQ(r.measured.at("auc").get<double>(), host[i].measured.at("auc").get<double>()) << at;
    EXPECT_EQ(r.measured.at("error").get<double>(), host[i].measured.at("error").get<double>()) << at;
    EXPECT_EQ(r.measured.at("max_abs_ap_error").get<double>(), host[i].measured.at("max_abs_ap_error").get<double>())
        << at;
    const int64_t n = r.config.at("n").get<int64_t>();
    const std::vector<int64_t> shares = ShardCounts(n, r.world_size, ShardingOf(r));
    const Json& copies = r.measured.at("device_copies");
    ASSERT_EQ(copies.size(), static_cast<std::size_t>(r.world_size)) << at;
    for (int rank = 0; rank < r.world_size; ++rank) {
      const Json& k = copies.at(rank);
      const std::string who = at + " rank " + std::to_string(rank) + ": " + Dump(k);
      const int64_t mine = shares[rank];
      EXPECT_EQ(Get(k, "prediction", "h2d", "calls"), mine > 0 ? 1 : 0) << who;
      EXPECT_EQ(Get(k, "prediction", "h2d", "bytes"), mine * 3 * 8) << who;
      EXPECT_EQ(Get(k, "prediction", "d2h", "calls"), 1) << who;
      EXPECT_EQ(Get(k, "prediction", "d2h", "bytes"), n * 3 * 8) << who;
      EXPECT_EQ(Get(k, "statistic", "d2h", "calls"), 1) << who;
      EXPECT_EQ(Get(k, "statistic", "d2h", "bytes"), 16) << who;
      EXPECT_EQ(k.at("h2d").at("calls").get<int64_t>(), mine > 0 ? 1 : 0) << who;
      EXPECT_EQ(k.at("d2h").at("calls").get<int64_t>(), 2) << who;
      const Json& staged = r.measured.at("comm_staging").at(rank);
      const bool lengths = OnNccl() && r.variant != "known_counts";
      EXPECT_EQ(Get(staged, "h2d", "calls"), lengths ? 1 : 0) << who << Dump(staged);
      EXPECT_EQ(Get(staged, "h2d", "bytes"), lengths ? 8 : 0) << who << Dump(staged);
      EXPECT_EQ(Get(staged, "d2h", "calls"), lengths ? 1 : 0) << who << Dump(staged);
      EXPECT_EQ(Get(staged, "d2h", "bytes"), lengths ? 8 * r.world_size : 0) << who << Dump(staged);
    }
  }
}

}  // namespace
}  // namespace ddp::wrong_all_gather
