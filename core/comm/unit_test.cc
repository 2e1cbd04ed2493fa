// Pure parts of the comm layer: fingerprints and their comparison, op and
// type names, option resolution from the environment.
#include <map>
#include <string>

#include "core/cli/config_error.h"
#include "core/collective/fingerprint.h"
#include "core/comm/options.h"
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
  f.engine_variant = GlooAllgathervVariant(GlooAllgathervAlgorithm::kDirect, 4u << 20);
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

TEST(Fingerprint, AllgathervEngineVariantsMustAgree) {
  const std::vector<std::size_t> counts = {2, 3, 4};
  std::vector<Fingerprint> all = {Fp(OpKind::kAllgatherv, 2), Fp(OpKind::kAllgatherv, 3),
                                  Fp(OpKind::kAllgatherv, 4)};
  for (auto& f : all) {
    f.counts_hash = HashCounts(counts);
    f.engine_variant = GlooAllgathervVariant(GlooAllgathervAlgorithm::kRing, 512 * 1024);
  }
  EXPECT_FALSE(FindMismatch(all, counts).has_value());
  all[0].engine_variant = GlooAllgathervVariant(GlooAllgathervAlgorithm::kDirect, 512 * 1024);
  all[2].engine_variant = GlooAllgathervVariant(GlooAllgathervAlgorithm::kRing, 4096 * 1024);
  const std::string msg = *FindMismatch(all, counts);
  EXPECT_EQ(msg.rfind(
                "checked mode: ranks disagree on the Gloo allgatherv algorithm and piece size of "
                "collective #4 (allgatherv on rank 0): direct in 512 KiB pieces on rank [0]; "
                "ring in 512 KiB pieces on rank [1]; ring in 4096 KiB pieces on rank [2].\n",
                0),
            0u)
      << msg;
  // The counts come first: they are the caller's mistake, the variant the set-up's.
  all[1].counts_hash = 7;
  EXPECT_NE(FindMismatch(all, counts)->find("the counts vectors passed differ"),
            std::string::npos);
  EXPECT_EQ(GlooAllgathervVariantName(GlooAllgathervVariant(GlooAllgathervAlgorithm::kRing, 100)),
            "ring in 100 B pieces");
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
  EXPECT_EQ(ResolveTraceEntries(o, Env({})), 2000u);
  EXPECT_EQ(ResolveTraceEntries(o, Env({{"DDP_PITFALLS_TRACE_ENTRIES", "0"}})), 0u);
  EXPECT_EQ(ResolveGlooAllgatherv(o, Env({})), GlooAllgathervAlgorithm::kRing);
  EXPECT_EQ(ResolveGlooAllgatherv(o, Env({{"DDP_GLOO_ALLGATHERV", "direct"}})),
            GlooAllgathervAlgorithm::kDirect);
  o.gloo_allgatherv = GlooAllgathervAlgorithm::kRing;
  EXPECT_EQ(ResolveGlooAllgatherv(o, Env({{"DDP_GLOO_ALLGATHERV", "direct"}})),
            GlooAllgathervAlgorithm::kRing);
  EXPECT_EQ(ResolveGlooAllgathervPieceBytes(o, Env({})), 512u * 1024);
  EXPECT_EQ(ResolveGlooAllgathervPieceBytes(o, Env({{"DDP_GLOO_ALLGATHERV_PIECE_KIB", "4096"}})),
            4096u * 1024);
  o.gloo_allgatherv_piece_bytes = 64 * 1024;
  EXPECT_EQ(ResolveGlooAllgathervPieceBytes(o, Env({{"DDP_GLOO_ALLGATHERV_PIECE_KIB", "4096"}})),
            64u * 1024);
  o.gloo_allgatherv_piece_bytes = 1024;
  EXPECT_THROW(ResolveGlooAllgathervPieceBytes(o, Env({})), launch::ConfigError);
  o.gloo_allgatherv_piece_bytes.reset();
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
  for (const char* bad : {"", "63", "65537", "512K", "-1", "abc"}) {
    try {
      ResolveGlooAllgathervPieceBytes(o, Env({{"DDP_GLOO_ALLGATHERV_PIECE_KIB", bad}}));
      ADD_FAILURE() << bad << " accepted";
    } catch (const launch::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("DDP_GLOO_ALLGATHERV_PIECE_KIB"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("[64, 65536]"), std::string::npos);
    }
  }
  for (const char* bad : {"", "Ring", "tree"}) {
    try {
      ResolveGlooAllgatherv(o, Env({{"DDP_GLOO_ALLGATHERV", bad}}));
      ADD_FAILURE() << bad << " accepted";
    } catch (const launch::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("DDP_GLOO_ALLGATHERV"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("ring|direct"), std::string::npos);
    }
  }
  for (const char* bad : {"", "-1", "many", "1000001"}) {
    EXPECT_THROW(ResolveTraceEntries(o, Env({{"DDP_PITFALLS_TRACE_ENTRIES", bad}})),
                 launch::ConfigError)
        << bad;
  }
}

TEST(Options, TraceDirDefaultsToTheRendezvousFolder) {
  CommOptions o;
  o.run_id = "r7";
  EXPECT_EQ(ResolveTraceDir(o, "file:/tmp/rdzv-1", Env({})), "/tmp/rdzv-1/trace");
  EXPECT_EQ(ResolveTraceDir(o, "file:/tmp/rdzv-1 [x/]", Env({})), "/tmp/rdzv-1/trace");
  EXPECT_EQ(ResolveTraceDir(o, "redis://h:1", Env({{"TMPDIR", "/scratch"}})),
            "/scratch/ddp-pitfalls-trace/r7");
  EXPECT_EQ(ResolveTraceDir(o, "redis://h:1", Env({})), "/tmp/ddp-pitfalls-trace/r7");
  EXPECT_EQ(ResolveTraceDir(o, "file:/a", Env({{"DDP_PITFALLS_TRACE_DIR", "/keep"}})), "/keep");
  o.trace_dir = "/mine";
  EXPECT_EQ(ResolveTraceDir(o, "file:/a", Env({{"DDP_PITFALLS_TRACE_DIR", "/keep"}})), "/mine");
}

TEST(Types, NamesParseBack) {
  for (int i = 0; i <= static_cast<int>(OpKind::kBarrier); ++i) {
    EXPECT_EQ(ParseOpKind(Name(static_cast<OpKind>(i))), static_cast<OpKind>(i));
  }
  for (int i = 0; i <= static_cast<int>(DType::kInt64); ++i) {
    EXPECT_EQ(ParseDType(Name(static_cast<DType>(i))), static_cast<DType>(i));
  }
  EXPECT_EQ(ParseReduceOp("max"), ReduceOp::kMax);
  EXPECT_FALSE(ParseOpKind("teleport").has_value());
  EXPECT_FALSE(ParseDType("float16").has_value());
}

}  // namespace
}  // namespace ddp::comm
