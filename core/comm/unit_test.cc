// Pure parts of the comm layer: fingerprints and their comparison, progress
// records and the desync report, option resolution from the environment.
#include <map>

#include "core/comm/fingerprint.h"
#include "core/comm/options.h"
#include "core/comm/progress.h"
#include "core/launch/config_error.h"
#include "gtest/gtest.h"

namespace ddp::comm {
namespace {

Fingerprint Fp(OpKind op, uint64_t count, int64_t seq = 4) {
  Fingerprint f;
  f.op = op;
  f.dtype = DType::kFloat64;
  f.seq = seq;
  f.count = count;
  return f;
}

TEST(Fingerprint, SerializeRoundTrips) {
  Fingerprint f = Fp(OpKind::kBroadcast, 123456789012ull);
  f.root = 3;
  f.reduce = 2;
  f.counts_hash = 0xdeadbeefcafef00dull;
  const auto bytes = f.Serialize();
  EXPECT_EQ(Fingerprint::Deserialize(bytes.data()), f);
}

TEST(Fingerprint, AgreeingRanksPass) {
  EXPECT_FALSE(FindMismatch({Fp(OpKind::kAllreduce, 5), Fp(OpKind::kAllreduce, 5)}).has_value());
  // allgatherv: different own counts are fine when counts[] agrees with them.
  const std::vector<std::size_t> counts = {2, 0, 7};
  std::vector<Fingerprint> all = {Fp(OpKind::kAllgatherv, 2), Fp(OpKind::kAllgatherv, 0),
                                  Fp(OpKind::kAllgatherv, 7)};
  for (auto& f : all) f.counts_hash = HashCounts(counts);
  EXPECT_FALSE(FindMismatch(all, counts).has_value());
}

TEST(Fingerprint, MismatchMessagesNameRanksAndValues) {
  EXPECT_EQ(*FindMismatch({Fp(OpKind::kAllreduce, 5), Fp(OpKind::kAllreduce, 5),
                           Fp(OpKind::kAllreduce, 6), Fp(OpKind::kAllreduce, 6)}),
            "checked mode: ranks disagree on the count of collective #4 (allreduce on rank 0): "
            "count 5 on ranks [0, 1]; count 6 on ranks [2, 3].\n"
            "  rank 0: allreduce seq=4 float64 count=5\n"
            "  rank 1: allreduce seq=4 float64 count=5\n"
            "  rank 2: allreduce seq=4 float64 count=6\n"
            "  rank 3: allreduce seq=4 float64 count=6\n"
            "The engine was not called.");
  auto msg = *FindMismatch({Fp(OpKind::kBarrier, 0), Fp(OpKind::kAllreduce, 1)});
  EXPECT_NE(msg.find("disagree on the operation of collective #4 (barrier on rank 0): "
                     "barrier on rank [0]; allreduce on rank [1]."),
            std::string::npos)
      << msg;
  msg = *FindMismatch({Fp(OpKind::kBarrier, 0, 4), Fp(OpKind::kBarrier, 0, 5)});
  EXPECT_NE(msg.find("sequence number"), std::string::npos) << msg;
  Fingerprint a = Fp(OpKind::kBroadcast, 3), b = a;
  a.root = 0;
  b.root = 1;
  EXPECT_NE(FindMismatch({a, b})->find("root 0 on rank [0]; root 1 on rank [1]"), std::string::npos);
  Fingerprint c = Fp(OpKind::kAllreduce, 3), d = c;
  c.reduce = static_cast<int64_t>(ReduceOp::kSum);
  d.reduce = static_cast<int64_t>(ReduceOp::kMax);
  EXPECT_NE(FindMismatch({c, d})->find("sum on rank [0]; max on rank [1]"), std::string::npos);
  Fingerprint e = Fp(OpKind::kAllgather, 3), g = e;
  g.dtype = DType::kInt32;
  EXPECT_NE(FindMismatch({e, g})->find("float64 on rank [0]; int32 on rank [1]"), std::string::npos);
}

TEST(Fingerprint, AllgathervCountsMustMatchContributions) {
  const std::vector<std::size_t> counts = {2, 3};
  std::vector<Fingerprint> all = {Fp(OpKind::kAllgatherv, 2), Fp(OpKind::kAllgatherv, 4)};
  for (auto& f : all) f.counts_hash = HashCounts(counts);
  EXPECT_NE(FindMismatch(all, counts)
                ->find("counts[1] = 3 on every rank, but rank 1 contributes 4 elements"),
            std::string::npos);
  all[1].counts_hash = HashCounts(std::vector<std::size_t>{2, 4});
  EXPECT_NE(FindMismatch(all, counts)->find("the counts vectors passed differ between ranks"),
            std::string::npos);
}

TEST(Progress, RecordsRoundTrip) {
  const ProgressRecord r{ProgressRecord::State::kEntered, 41, OpKind::kReduceScatter};
  EXPECT_EQ(r.Encode(), "entered 41 reduce_scatter");
  EXPECT_EQ(ProgressRecord::Decode(r.Encode()), r);
  EXPECT_FALSE(ProgressRecord::Decode("garbage").has_value());
  EXPECT_FALSE(ProgressRecord::Decode("entered 3 teleport").has_value());
}

TEST(Progress, ReportSaysWhoNeverEnteredAndWhoIsPast) {
  using S = ProgressRecord::State;
  std::vector<std::optional<ProgressRecord>> records = {
      ProgressRecord{S::kEntered, 5, OpKind::kAllreduce},
      ProgressRecord{S::kFinished, 4, OpKind::kBarrier},
      std::nullopt,
      ProgressRecord{S::kEntered, 6, OpKind::kAllgather},
  };
  EXPECT_EQ(FormatDesyncReport(0, 5, OpKind::kAllreduce, records, true),
            "desync report for collective #5 (allreduce), last record of each rank in the "
            "rendezvous store:\n"
            "  rank 0: entered allreduce #5 (completed up to #4)  <- this rank\n"
            "  rank 1: finished normally after barrier #4\n"
            "  rank 2: no record (never created this communicator?)\n"
            "  rank 3: entered allgather #6 (completed up to #5)\n"
            "  never entered #5: [1, 2]\n"
            "  already past #5: [3]");
  EXPECT_EQ(FormatDesyncReport(0, 5, OpKind::kAllreduce, records, false),
            "desync report unavailable: progress records are off (DDP_PITFALLS_PROGRESS=0)");
}

launch::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(Options, EnvironmentFillsUnsetFields) {
  CommOptions o;
  EXPECT_EQ(ResolveTimeout(o, Env({})), std::chrono::seconds(60));
  EXPECT_EQ(ResolveTimeout(o, Env({{"DDP_PITFALLS_TIMEOUT", "2.5"}})),
            std::chrono::milliseconds(2500));
  EXPECT_FALSE(ResolveChecked(o, Env({})));
  EXPECT_TRUE(ResolveChecked(o, Env({{"DDP_PITFALLS_CHECK", "1"}})));
  EXPECT_TRUE(ResolveProgress(o, Env({})));
  EXPECT_FALSE(ResolveProgress(o, Env({{"DDP_PITFALLS_PROGRESS", "0"}})));
  o.timeout = std::chrono::milliseconds(700);
  o.checked = false;
  EXPECT_EQ(ResolveTimeout(o, Env({{"DDP_PITFALLS_TIMEOUT", "9"}})), std::chrono::milliseconds(700));
  EXPECT_FALSE(ResolveChecked(o, Env({{"DDP_PITFALLS_CHECK", "1"}})));
}

TEST(Options, BadEnvironmentValuesAreConfigErrors) {
  CommOptions o;
  for (const char* bad : {"", "0", "-1", "abc", "1e99", "nan"}) {
    EXPECT_THROW(ResolveTimeout(o, Env({{"DDP_PITFALLS_TIMEOUT", bad}})), launch::ConfigError) << bad;
  }
  EXPECT_THROW(ResolveChecked(o, Env({{"DDP_PITFALLS_CHECK", "true"}})), launch::ConfigError);
  EXPECT_THROW(ResolveProgress(o, Env({{"DDP_PITFALLS_PROGRESS", "off"}})), launch::ConfigError);
}

}  // namespace
}  // namespace ddp::comm
