// The flight recorder's pure parts: the ring buffer, the dump format, the
// analyzer's verdict for each mismatch class. (Real ranks: core/comm's
// trace_test.)
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/launch/spawn.h"

#include "core/trace/analyze.h"
#include "core/trace/dump_json.h"
#include "core/trace/recorder.h"
#include "gtest/gtest.h"

namespace ddp::trace {
namespace {

using comm::DType;
using comm::OpKind;
using Clock = std::chrono::steady_clock;

comm::Fingerprint Fp(int64_t seq, OpKind op = OpKind::kAllreduce, uint64_t count = 4,
                     DType dtype = DType::kFloat64) {
  comm::Fingerprint f;
  f.seq = seq;
  f.op = op;
  f.count = count;
  f.dtype = dtype;
  if (op == OpKind::kAllreduce) f.reduce = 0;
  return f;
}

TEST(Recorder, KeepsTheLastEntriesWithStatesTimesAndCallSites) {
  FlightRecorder rec({"comm0", "gloo", 1, 2, std::chrono::seconds(2), false}, 3);
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < 5; ++s) {
    rec.Enter(Fp(s), {}, std::source_location::current(), t0 + std::chrono::milliseconds(10 * s));
    rec.Exit(s, State::kCompleted, t0 + std::chrono::milliseconds(10 * s + 1));
  }
  const int line = __LINE__ + 1;
  rec.Enter(Fp(5, OpKind::kBarrier, 0), {}, std::source_location::current(), t0 + std::chrono::milliseconds(60));
  ASSERT_TRUE(rec.in_flight().has_value());
  EXPECT_EQ(rec.in_flight()->seq, 5);
  const CommTrace t = rec.Snapshot();
  EXPECT_EQ(t.name, "comm0");
  EXPECT_EQ(t.next_seq, 6);
  EXPECT_EQ(t.capacity, 3);
  ASSERT_EQ(t.entries.size(), 3u);  // #3, #4, #5: the ring overwrote #0..#2
  EXPECT_EQ(t.entries[0].seq, 3);
  EXPECT_EQ(t.entries[1].state, State::kCompleted);
  EXPECT_NEAR(*t.entries[1].exit_unix_s - t.entries[1].enter_unix_s, 0.001, 1e-6);
  EXPECT_EQ(t.entries[2].state, State::kEntered);
  EXPECT_FALSE(t.entries[2].exit_unix_s.has_value());
  EXPECT_EQ(t.entries[2].site.file, "core/trace/trace_unit_test.cc");
  EXPECT_EQ(t.entries[2].site.line, line);
  EXPECT_EQ(ShortFunction(t.entries[2].site.function), "TestBody");
  rec.Exit(5, State::kTimedOut, t0 + std::chrono::milliseconds(70));
  EXPECT_FALSE(rec.in_flight().has_value());
  rec.MarkBroken();
  EXPECT_EQ(rec.Snapshot().state, "broken");
}

TEST(Recorder, AllgathervKeepsEveryRanksCount) {
  FlightRecorder rec({"c", "gloo", 0, 3, std::chrono::seconds(1), false}, 8);
  const std::vector<std::size_t> counts = {3, 2, 3};
  rec.Enter(Fp(0, OpKind::kAllgatherv, 3, DType::kFloat32), counts, std::source_location::current(),
            Clock::now());
  const auto e = rec.Snapshot().entries.at(0);
  EXPECT_EQ(e.counts, (std::vector<uint64_t>{3, 2, 3}));
  EXPECT_EQ(Describe(e), "allgatherv float32 x[3, 2, 3]");
}

TEST(Describe, NamesOpDtypeCountAndArguments) {
  TraceEntry e;
  e.op = OpKind::kAllreduce;
  e.dtype = DType::kFloat64;
  e.count = 497;
  e.reduce = 0;
  EXPECT_EQ(Describe(e), "allreduce float64 x497");
  e.reduce = 1;
  EXPECT_EQ(Describe(e), "allreduce(max) float64 x497");
  e.op = OpKind::kBroadcast;
  e.reduce = -1;
  e.root = 2;
  EXPECT_EQ(Describe(e), "broadcast(root 2) float64 x497");
  e.op = OpKind::kBarrier;
  EXPECT_EQ(Describe(e), "barrier");
  EXPECT_EQ(ShortFunction("int ddp::x::{anonymous}::RankMain(const ddp::launch::RankEnv&, int)"),
            "RankMain");
}

// --- dumps built by hand for the analyzer ---

TraceEntry E(int64_t seq, State state, double enter, std::optional<double> exit, int line,
             OpKind op = OpKind::kAllreduce, uint64_t count = 497, DType dtype = DType::kFloat64) {
  TraceEntry e;
  e.seq = seq;
  e.op = op;
  e.dtype = dtype;
  e.count = count;
  if (op == OpKind::kAllreduce) e.reduce = 0;
  e.state = state;
  e.enter_unix_s = enter;
  e.exit_unix_s = exit;
  e.site = {"repro/x/run.cc", line, "int ddp::x::RankMain(int)"};
  return e;
}

// A rank that completed #0..#n-1 at the same site.
RankDump Dump(int rank, int world, int64_t n, double t = 1000) {
  RankDump d;
  d.rank = rank;
  d.world_size = world;
  d.host = "host" + std::to_string(rank);
  d.pid = 100 + rank;
  d.run_id = "run";
  d.reason = "request rank0";
  d.dump_unix_s = t + 10;
  CommTrace c;
  c.name = "comm0";
  c.backend = "gloo";
  c.rank = rank;
  c.world_size = world;
  c.deadline_s = 2;
  c.capacity = 2000;
  for (int64_t s = 0; s < n; ++s) c.entries.push_back(E(s, State::kCompleted, t + s * 0.01, t + s * 0.01 + 0.0003, 142));
  c.next_seq = n;
  d.comms.push_back(c);
  return d;
}

void Push(RankDump& d, TraceEntry e) {
  d.comms[0].entries.push_back(std::move(e));
  d.comms[0].next_seq = d.comms[0].entries.back().seq + 1;
}

TEST(Analyze, UnevenStepsNameTheMissingRanksAndTheWaitingRanksCallSite) {
  std::vector<std::optional<RankDump>> dumps;
  for (int r = 0; r < 4; ++r) dumps.push_back(Dump(r, 4, 8));
  Push(*dumps[0], E(8, State::kTimedOut, 1000.5, 1002.51, 142));
  for (int r = 1; r < 4; ++r) dumps[r]->comms[0].state = "finished";
  const Analysis a = Analyze(dumps);
  EXPECT_TRUE(a.mismatch);
  EXPECT_EQ(a.klass, "missing ranks");
  EXPECT_EQ(a.seq, 8);
  EXPECT_EQ(a.verdict,
            "collective #8 (allreduce float64 x497): ranks [1, 2, 3] never entered; rank 0 timed "
            "out after 2.01 s at repro/x/run.cc:142");
  EXPECT_EQ(a.culprits, (std::vector<int>{1, 2, 3}));
  EXPECT_NE(a.report.find("class: missing ranks; culprit ranks [1, 2, 3]"), std::string::npos) << a.report;
  EXPECT_NE(a.report.find("ranks [1, 2, 3]: never entered (last: #7 completed at "
                          "repro/x/run.cc:142; communicator finished)"),
            std::string::npos)
      << a.report;
  EXPECT_NE(a.report.find("rank 2 (host2, pid 102, dumped on request rank0): comm0 finished, 8 "
                          "collectives entered; last 3:\n    #5 allreduce float64 x497 completed in "
                          "0.30 ms at repro/x/run.cc:142 (RankMain)"),
            std::string::npos)
      << a.report;
  EXPECT_EQ(a.json.at("class").get<std::string>(), "missing ranks");
  EXPECT_EQ(a.json.at("ranks").size(), 4u);
  // The same with a rank still inside it (a dump taken before its deadline).
  dumps[0]->comms[0].entries.back() = E(8, State::kEntered, 1007.99, std::nullopt, 142);
  EXPECT_EQ(Analyze(dumps).verdict,
            "collective #8 (allreduce float64 x497): ranks [1, 2, 3] never entered; rank 0 waiting "
            "since 2.01 s at repro/x/run.cc:142");
}

TEST(Analyze, OpTypeSizeDtypeAndArgumentMismatchesNameBothSidesAndTheirCallSites) {
  auto world = [](TraceEntry odd) {
    std::vector<std::optional<RankDump>> dumps;
    for (int r = 0; r < 3; ++r) {
      dumps.push_back(Dump(r, 3, 1));
      Push(*dumps[r], r == 1 ? odd : E(1, State::kEntered, 1001, std::nullopt, 150, OpKind::kAllreduce, 4));
    }
    return Analyze(dumps);
  };
  Analysis a = world(E(1, State::kEntered, 1001, std::nullopt, 152, OpKind::kBarrier, 0));
  EXPECT_EQ(a.klass, "op type");
  EXPECT_EQ(a.verdict,
            "collective #1 (op type mismatch): allreduce float64 x4 on ranks [0, 2] at "
            "repro/x/run.cc:150; barrier on rank 1 at repro/x/run.cc:152");
  EXPECT_EQ(a.culprits, (std::vector<int>{1}));
  a = world(E(1, State::kEntered, 1001, std::nullopt, 150, OpKind::kAllreduce, 5));
  EXPECT_EQ(a.klass, "size");
  EXPECT_EQ(a.verdict,
            "collective #1 (size mismatch): allreduce float64 x4 on ranks [0, 2] at "
            "repro/x/run.cc:150; allreduce float64 x5 on rank 1 at repro/x/run.cc:150");
  a = world(E(1, State::kEntered, 1001, std::nullopt, 150, OpKind::kAllreduce, 4, DType::kFloat32));
  EXPECT_EQ(a.klass, "dtype");
  EXPECT_EQ(a.culprits, (std::vector<int>{1}));
  TraceEntry max = E(1, State::kEntered, 1001, std::nullopt, 150, OpKind::kAllreduce, 4);
  max.reduce = 1;
  a = world(max);
  EXPECT_EQ(a.klass, "arguments");
  EXPECT_NE(a.verdict.find("allreduce(max) float64 x4 on rank 1"), std::string::npos) << a.verdict;
}

TEST(Analyze, AllgathervCountsDisagreeingIsASizeMismatch) {
  std::vector<std::optional<RankDump>> dumps;
  for (int r = 0; r < 2; ++r) {
    dumps.push_back(Dump(r, 2, 0));
    TraceEntry e = E(0, State::kEntered, 1000, std::nullopt, 9, OpKind::kAllgatherv, r == 0 ? 3 : 2,
                     DType::kFloat32);
    e.counts = r == 0 ? std::vector<uint64_t>{3, 2} : std::vector<uint64_t>{3, 3};
    Push(*dumps[r], e);
  }
  const Analysis a = Analyze(dumps);
  EXPECT_EQ(a.klass, "size");
  EXPECT_NE(a.verdict.find("allgatherv float32 x[3, 2] on rank 0"), std::string::npos) << a.verdict;
}

TEST(Analyze, ARankWithoutADumpIsNamedAsSuch) {
  std::vector<std::optional<RankDump>> dumps;
  for (int r = 0; r < 3; ++r) dumps.push_back(Dump(r, 3, 3));
  dumps[2].reset();
  Push(*dumps[0], E(3, State::kTimedOut, 1001, 1003, 77));
  Push(*dumps[1], E(3, State::kEntered, 1001, std::nullopt, 77));
  AnalyzeOptions o;
  const Analysis a = Analyze(dumps, o);
  EXPECT_EQ(a.klass, "state");
  EXPECT_EQ(a.culprits, (std::vector<int>{2}));
  EXPECT_EQ(a.no_dump, (std::vector<int>{2}));
  EXPECT_EQ(a.verdict,
            "collective #3 (allreduce float64 x497): no dump from rank 2 (stopped, dead or "
            "unreachable); rank 0 timed out after 2.00 s at repro/x/run.cc:77; rank 1 waiting "
            "since 9.00 s at repro/x/run.cc:77");
  EXPECT_NE(a.report.find("\nno dump from rank 2 (stopped, dead or unreachable)\n"), std::string::npos)
      << a.report;
  o.no_dump_notes = {"", "", "store error: boom"};
  EXPECT_NE(Analyze(dumps, o).verdict.find("no dump from rank 2 (store error: boom)"), std::string::npos);
}

TEST(Analyze, EveryRankStuckInTheSameCollectiveIsAStateVerdict) {
  std::vector<std::optional<RankDump>> dumps;
  for (int r = 0; r < 2; ++r) {
    dumps.push_back(Dump(r, 2, 2));
    Push(*dumps[r], E(2, State::kTimedOut, 1001, 1003, 5));
  }
  const Analysis a = Analyze(dumps);
  EXPECT_EQ(a.klass, "state");
  EXPECT_EQ(a.verdict,
            "collective #2 (allreduce float64 x497): every rank entered, none completed; ranks "
            "[0, 1] timed out after 2.00 s at repro/x/run.cc:5");
}

TEST(Analyze, AgreeingDumpsAreNoMismatch) {
  std::vector<std::optional<RankDump>> dumps;
  for (int r = 0; r < 3; ++r) dumps.push_back(Dump(r, 3, 5));
  const Analysis a = Analyze(dumps);
  EXPECT_FALSE(a.mismatch);
  EXPECT_EQ(a.verdict, "no mismatch: 3 ranks agree on 1 communicator (comm0: 5 collectives), all completed");
  // The ring overwrote different amounts on different ranks: only the
  // collectives every rank still holds are compared.
  dumps[1]->comms[0].entries.erase(dumps[1]->comms[0].entries.begin());
  EXPECT_FALSE(Analyze(dumps).mismatch);
}

TEST(DumpJson, RoundTripsAndNamesTheBadField) {
  RankDump d = Dump(1, 2, 2);
  TraceEntry v = E(2, State::kEntered, 1000.25, std::nullopt, 9, OpKind::kAllgatherv, 2, DType::kInt64);
  v.counts = {1, 2};
  v.reduce = -1;
  Push(d, v);
  d.request = "rank0-pid1-2";
  const RankDump back = ParseDump(Dump(ToJson(d)), "x");
  EXPECT_EQ(back, d);

  const std::string dir = launch::MakeFreshDir("trace-json");
  const std::string path = WriteDumpFile(dir, d);
  EXPECT_EQ(path, dir + "/rank1.json");
  EXPECT_EQ(ReadDumpFile(path), d);

  std::string text = Dump(ToJson(d));
  text.replace(text.find("\"allgatherv\""), 12, "\"allgathr\"");
  try {
    ParseDump(text, "rank1.json");
    FAIL();
  } catch (const DumpError& e) {
    EXPECT_STREQ(e.what(), "rank1.json: comms[0].entries[2].op: unknown value 'allgathr'");
  }
  EXPECT_THROW(ParseDump("{", "f"), DumpError);
  try {
    ReadDumpFile(dir + "/rank9.json");
    FAIL();
  } catch (const DumpError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/rank9.json: cannot open"), std::string::npos);
  }
}

// Issue 59 (4): two files claiming one rank (rank1.json, rank01.json) are
// refused naming both; before, the later one in the listing replaced the
// other without a word. Only rank<digits>.json is a dump (issue 59, 10):
// ranks.json is not.
TEST(DumpJson, TwoFilesOfOneRankAreRefusedNamingBoth) {
  const std::string dir = launch::MakeFreshDir("trace-dup");
  const std::string one = WriteDumpFile(dir, Dump(1, 2, 2));
  WriteDumpFile(dir, Dump(0, 2, 2));
  std::filesystem::copy_file(one, dir + "/rank01.json");
  try {
    ReadDumpDir(dir);
    FAIL() << "two files of rank 1 were read";
  } catch (const DumpError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/rank01.json and " + dir +
                                         "/rank1.json: both are rank 1; keep one dump per rank");
  }
  EXPECT_EQ(SuiteDumpRank("rank01.json"), 1);
  EXPECT_EQ(SuiteDumpRank("ranks.json"), std::nullopt);
  EXPECT_EQ(SuiteDumpRank("rank1.json.tmp"), std::nullopt);
  EXPECT_EQ(SuiteDumpRank("rank1234567.json"), std::nullopt);
}

}  // namespace
}  // namespace ddp::trace
