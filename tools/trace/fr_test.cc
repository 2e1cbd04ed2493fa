// The PyTorch Flight Recorder reader and analyzer on the committed corpus
// (tools/trace/testdata/fr_corpus, written by real PyTorch 2.15 gloo jobs:
// tools/vs_pytorch/fr_corpus/run.py), scored against each scenario's
// truth.json; then bad input, the pickle subset, and --to-fr's pickles.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/results/json.h"
#include "core/trace/dump_json.h"
#include "gtest/gtest.h"
#include "tools/trace/fr_analyze.h"
#include "tools/trace/fr_dump.h"
#include "tools/trace/pickle.h"
#include "tools/trace/to_fr.h"

namespace ddp::trace::fr {
namespace {

const std::string kCorpus = "tools/trace/testdata/fr_corpus";

const char* kScenarios[] = {"allreduce_vs_barrier", "ddp_short", "dtype_mismatch", "extra_step",
                            "healthy", "killed", "size_mismatch", "skip_one", "stalled",
                            "subgroup_hang", "uneven_ok", "w4_two_mismatch", "w4_two_stalled",
                            // Subgroups (issue 45): pg_config differs across ranks in these dumps.
                            "default_hang_sub_ok", "mesh_one_hung", "sub_op_mismatch", "sub_skip",
                            "sub_stall_cascade", "two_hung"};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Fresh(const std::string& name) {
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void Put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string Base(const std::string& p) { return p.substr(p.rfind('/') + 1); }

class Corpus : public ::testing::TestWithParam<const char*> {};

TEST_P(Corpus, VerdictMatchesTheGroundTruth) {
  const std::string dir = kCorpus + "/" + GetParam();
  const results::Json truth = results::ParseJson(Slurp(dir + "/truth.json"));
  std::vector<int> culprits;
  for (const auto& c : truth.at("culprits")) culprits.push_back(static_cast<int>(c.get<double>()));
  const int world = static_cast<int>(truth.at("world_size").get<double>());

  const DirDumps dumps = ReadDir(dir);
  ASSERT_EQ(static_cast<int>(dumps.by_rank.size()), world);
  const Analysis a = Analyze(dumps);
  SCOPED_TRACE(a.report);
  EXPECT_EQ(a.healthy, truth.at("healthy").get<bool>());
  EXPECT_EQ(a.culprits, culprits);
  if (truth.contains("findings")) {
    // Every finding: its group, collective and culprits, each culprit a
    // member of that group (no blame outside it); no other finding.
    const auto& want = truth.at("findings");
    EXPECT_EQ(a.findings.size(), want.size());
    for (const auto& f : want) {
      const std::string pg = f.at("process_group").get<std::string>();
      std::vector<int> fc;
      for (const auto& c : f.at("culprits")) fc.push_back(static_cast<int>(c.get<double>()));
      const Finding* hit = nullptr;
      for (const Finding& x : a.findings) {
        if (x.groups.size() == 1 && a.groups[x.groups[0]].pg == pg) hit = &x;
      }
      ASSERT_NE(hit, nullptr) << "no finding in process group " << pg;
      const GroupVerdict& g = a.groups[hit->groups[0]];
      EXPECT_EQ(g.seq, static_cast<int64_t>(f.at("seq").get<double>())) << pg;
      EXPECT_EQ(hit->culprits, fc) << pg;
      for (int c : hit->culprits) {
        EXPECT_NE(std::find(g.members.begin(), g.members.end(), c), g.members.end())
            << "rank " << c << " blamed in process group " << pg << ", not a member";
      }
    }
  }
  if (!a.healthy && (!truth.contains("findings") || truth.at("findings").size() == 1)) {
    // The first divergent collective: its group and sequence id.
    const GroupVerdict* g = nullptr;
    for (const auto& x : a.groups) {
      if (!x.healthy && x.culprits == culprits) g = &x;
    }
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->pg, truth.at("process_group").get<std::string>());
    EXPECT_EQ(g->seq, static_cast<int64_t>(truth.at("seq").get<double>()));
    EXPECT_FALSE(g->positions.empty());
  }
  // Each culprit's call site: the user's file and line, not torch's.
  for (const auto& [rank, site] : truth.at("sites").items()) {
    const auto& d = dumps.by_rank[static_cast<std::size_t>(std::stoi(rank))];
    if (!d) continue;  // killed: no dump, no call site
    const Entry* last = nullptr;
    for (const Entry& e : d->entries) {
      if (last == nullptr || e.time_created_ns >= last->time_created_ns) last = &e;
    }
    ASSERT_NE(last, nullptr);
    const Frame* f = last->UserFrame();
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(Base(f->file) + ":" + std::to_string(f->line),
              site.at("file").get<std::string>() + ":" +
                  std::to_string(static_cast<int>(site.at("line").get<double>())));
    EXPECT_NE(a.report.find(f->file + ":" + std::to_string(f->line)), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Fr, Corpus, ::testing::ValuesIn(kScenarios));

TEST(FrCorpus, HasTheIssuesScenariosAndTheTorchVersion) {
  EXPECT_GE(std::size(kScenarios), 19u);
  EXPECT_EQ(Slurp(kCorpus + "/VERSION").rfind("torch 2.15.0", 0), 0u);
}

TEST(FrCorpus, UnevenButLegalCollectivesAreHealthy) {
  // all_to_all_single with per-rank splits, and an all_reduce of [2, 3] on
  // one rank and [6] on the others (torchfrtrace calls both a mismatch).
  const DirDumps dumps = ReadDir(kCorpus + "/uneven_ok");
  bool shapes_differ = false, a2a = false;
  for (const auto& d : dumps.by_rank) {
    for (const Entry& e : d->entries) {
      a2a |= e.Op() == "all_to_all";
      shapes_differ |=
          e.Op() == "all_reduce" && e.input_sizes.size() == 1 && e.input_sizes[0].size() == 2;
    }
  }
  EXPECT_TRUE(a2a);
  EXPECT_TRUE(shapes_differ);
  EXPECT_TRUE(Analyze(dumps).healthy);
}

TEST(FrSubgroups, GlooPgConfigDiffersAcrossRanksAndTheDumpsAreStillOneJob) {
  // The issue's job (PyTorch 2.15, gloo, new_group([0, 1]), rank 2
  // outside): pg_config[''] holds the group-local ranks of the last group
  // each rank joined, [0, 1] on the members and [0, 1, 2] on rank 2.
  const DirDumps d = ReadDir(kCorpus + "/sub_skip");
  ASSERT_EQ(d.by_rank.size(), 3u);
  EXPECT_EQ(d.by_rank[0]->pg_config.at("").ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.by_rank[2]->pg_config.at("").ranks, (std::vector<int>{0, 1, 2}));
  // Group-local, not global: new_group([1, 2, 3])'s members show [0, 1, 2].
  const DirDumps m = ReadDir(kCorpus + "/sub_op_mismatch");
  EXPECT_EQ(m.by_rank[0]->pg_config.at("").ranks, (std::vector<int>{0, 1, 2, 3}));
  for (int r = 1; r < 4; ++r)
    EXPECT_EQ(m.by_rank[r]->pg_config.at("").ranks, (std::vector<int>{0, 1, 2})) << r;
  const Analysis a = Analyze(d);
  ASSERT_EQ(a.findings.size(), 1u);
  const GroupVerdict& g = a.groups[a.findings[0].groups[0]];
  EXPECT_EQ(g.pg, "1");
  EXPECT_EQ(g.members, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.members_from, "entries");
  for (const Position& p : g.positions) {
    EXPECT_EQ(std::count(p.ranks.begin(), p.ranks.end(), 2), 0) << "rank 2 judged in group 1";
  }
  // The verdict names the group's members and the missing rank's call site.
  EXPECT_EQ(a.verdict.rfind("culprit rank 1: process group 1 (ranks [0, 1]), collective #3 "
                            "(all_reduce): rank 0 entered it, rank 1 never did",
                            0),
            0u)
      << a.verdict;
  EXPECT_NE(a.verdict.find("; rank 1 at /"), std::string::npos) << a.verdict;
  EXPECT_EQ(a.verdict.find("rank 2"), std::string::npos) << a.verdict;
  // --comm 0: the default group alone is healthy.
  EXPECT_TRUE(Analyze(d, "0").healthy);
}

TEST(FrSubgroups, AMemberHeldInAnotherGroupIsNeitherLateNorBlamed) {
  // sub_stall_cascade: rank 1 stalls before subgroup [0, 1]'s #3; rank 2,
  // outside it, entered the default group's #2 alone. Whether rank 0 is
  // still held in the subgroup when the dumps were taken depends on the
  // load of the machine that wrote them; either way rank 2 is not blamed.
  const Analysis a = Analyze(ReadDir(kCorpus + "/sub_stall_cascade"));
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  for (const Finding& f : a.findings) EXPECT_EQ(f.culprits, std::vector<int>{1}) << f.line;
}

// A dump written the way NCCL writes pg_config (keyed by the group's name,
// its global ranks, only the groups the rank is in), for what the gloo
// corpus cannot show. Entries: (group, desc, seq, op).
struct FakeEntry {
  std::string pg, desc;
  int64_t seq;
  std::string op;
};
using FakeConfig =
    std::vector<std::tuple<std::string, std::string, std::string>>;  // name, desc, ranks

void PutStr(pickle::PickleWriter& w, const char* key, const std::string& value) {
  w.Str(key);
  w.Str(value);
}

void PutInt(pickle::PickleWriter& w, const char* key, int64_t value) {
  w.Str(key);
  w.Int(value);
}

// One entry of 4 floats, with one frame: the user's, train.py:(10 + seq).
void PutEntry(pickle::PickleWriter& w, const FakeEntry& e, int64_t id) {
  w.BeginDict();
  PutInt(w, "collective_seq_id", e.seq);
  w.Str("input_sizes");
  w.BeginList();
  w.BeginList();
  w.Int(4);
  w.EndList();
  w.EndList();
  w.Str("process_group");
  w.BeginTuple();
  w.Str(e.pg);
  w.Str(e.desc);
  w.EndTuple();
  PutStr(w, "profiling_name", "nccl:" + e.op);
  PutInt(w, "record_id", id);
  PutStr(w, "state", "scheduled");
  PutInt(w, "time_created_ns", 1'000'000'000 + id);
  w.Str("frames");
  w.BeginList();
  w.BeginDict();
  PutStr(w, "name", "step");
  PutStr(w, "filename", "train.py");
  PutInt(w, "line", 10 + e.seq);
  w.EndDict();
  w.EndList();
  w.EndDict();
}

std::string FakeDump(const FakeConfig& config, const std::vector<FakeEntry>& entries) {
  pickle::PickleWriter w;
  w.BeginDict();
  PutStr(w, "version", "2.10");
  w.Str("pg_config");
  w.BeginDict();
  for (const auto& [name, desc, ranks] : config) {
    w.Str(name);
    w.BeginDict();
    PutStr(w, "name", name);
    PutStr(w, "desc", desc);
    PutStr(w, "ranks", ranks);
    w.EndDict();
  }
  w.EndDict();
  w.Str("entries");
  w.BeginList();
  int64_t id = 0;
  for (const FakeEntry& e : entries) PutEntry(w, e, id++);
  w.EndList();
  w.EndDict();
  return w.Finish();
}

std::string ErrorOf(const std::string& dir, int world = 0) {
  try {
    ReadDir(dir, world);
  } catch (const DumpError& e) {
    return e.what();
  }
  return "no error";
}

const FakeConfig kDefault3 = {{"0", "default_pg", "[0, 1, 2]"}};

TEST(FrSubgroups, NcclPgConfigNamesTheMembersEvenOneThatNeverCame) {
  // Rank 1 belongs to group "1" ([0, 1], in its pg_config) but never made
  // one of its collectives: only the named pg_config can tell.
  const std::string dir = Fresh("fr-nccl-members");
  FakeConfig sub = kDefault3;
  sub.push_back({"1", "tp", "[0, 1]"});
  Put(dir + "/nccl_trace_rank_0",
      FakeDump(sub, {{"0", "default_pg", 1, "all_reduce"}, {"1", "tp", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_1", FakeDump(sub, {{"0", "default_pg", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_2", FakeDump(kDefault3, {{"0", "default_pg", 1, "all_reduce"}}));
  const DirDumps d = ReadDir(dir);
  const Analysis a = Analyze(d);
  SCOPED_TRACE(a.report);
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  ASSERT_EQ(a.findings.size(), 1u);
  const GroupVerdict& g = a.groups[a.findings[0].groups[0]];
  EXPECT_EQ(g.pg, "1");
  EXPECT_EQ(g.members, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.members_from, "pg_config");
  EXPECT_NE(a.verdict.find("process group 1 (tp, ranks [0, 1]), collective #1 (all_reduce)"),
            std::string::npos);
  // With its members not those that recorded in it (group-local ranks),
  // the named entry is not believed: the entries decide.
  Put(dir + "/nccl_trace_rank_0",
      FakeDump({{"0", "default_pg", "[0, 1, 2]"}, {"1", "tp", "[0, 1]"}},
               {{"0", "default_pg", 1, "all_reduce"}, {"1", "tp", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_1", FakeDump(kDefault3, {{"0", "default_pg", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_2",
      FakeDump({{"0", "default_pg", "[0, 1, 2]"}, {"1", "tp", "[0, 1]"}},
               {{"0", "default_pg", 1, "all_reduce"}, {"1", "tp", 1, "all_reduce"}}));
  const Analysis b = Analyze(ReadDir(dir));
  EXPECT_TRUE(b.healthy) << b.report;
  EXPECT_NE(b.report.find("its members are taken from the entries"), std::string::npos) << b.report;
}

TEST(FrSubgroups, DumpsOfDifferentJobsAreStillRefused) {
  const std::string dir = Fresh("fr-nccl-two-jobs");
  const std::vector<FakeEntry> one = {{"0", "default_pg", 1, "all_reduce"}};
  // A named group with different members on two ranks.
  Put(dir + "/nccl_trace_rank_0",
      FakeDump({{"0", "default_pg", "[0, 1]"}, {"1", "", "[0, 1]"}}, one));
  Put(dir + "/nccl_trace_rank_1",
      FakeDump({{"0", "default_pg", "[0, 1]"}, {"1", "", "[1, 2]"}}, one));
  std::string err = ErrorOf(dir);
  EXPECT_NE(err.find("pg_config['1'] ranks differ"), std::string::npos) << err;
  EXPECT_NE(err.find("dumps of different jobs in one folder"), std::string::npos) << err;
  // A rank beyond the default group's members.
  Put(dir + "/nccl_trace_rank_1", FakeDump({{"0", "default_pg", "[0, 1]"}}, one));
  Put(dir + "/nccl_trace_rank_2", FakeDump({{"0", "default_pg", "[0, 1]"}}, one));
  err = ErrorOf(dir);
  EXPECT_NE(err.find(dir + "/nccl_trace_rank_2: rank 2, but " + dir +
                     "/nccl_trace_rank_0's pg_config names a default group of 2 ranks: dumps of "
                     "different jobs in one folder"),
            std::string::npos)
      << err;
  std::filesystem::remove(dir + "/nccl_trace_rank_2");
  EXPECT_NE(ErrorOf(dir, 3).find("--world_size 3 but"), std::string::npos) << ErrorOf(dir, 3);
  EXPECT_EQ(ErrorOf(dir, 2), "no error");
  // One group name, two descriptions.
  Put(dir + "/nccl_trace_rank_0",
      FakeDump({{"0", "default_pg", "[0, 1]"}},
               {{"0", "default_pg", 1, "all_reduce"}, {"1", "tp", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_1",
      FakeDump({{"0", "default_pg", "[0, 1]"}},
               {{"0", "default_pg", 1, "all_reduce"}, {"1", "dp", 1, "all_reduce"}}));
  err = ErrorOf(dir);
  EXPECT_NE(err.find("process group '1' is described as 'dp', but as 'tp' in"), std::string::npos)
      << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

TEST(FrSubgroups, GroupsHoldingEachOthersMembersAreOneDeadlock) {
  // Rank 0 went on to subgroup [0, 1]'s #2, rank 1 to the default group's
  // #2 (with rank 2): each waits for the other. Which of them left the
  // program's order the dumps cannot tell; rank 2 is in neither question.
  const std::string dir = Fresh("fr-deadlock");
  Put(dir + "/nccl_trace_rank_0", FakeDump({}, {{"0", "default_pg", 1, "all_reduce"},
                                                {"1", "undefined", 1, "all_reduce"},
                                                {"1", "undefined", 2, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_1", FakeDump({}, {{"0", "default_pg", 1, "all_reduce"},
                                                {"1", "undefined", 1, "all_reduce"},
                                                {"0", "default_pg", 2, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_2",
      FakeDump({}, {{"0", "default_pg", 1, "all_reduce"}, {"0", "default_pg", 2, "all_reduce"}}));
  const Analysis a = Analyze(ReadDir(dir));
  SCOPED_TRACE(a.report);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].klass, "deadlock");
  EXPECT_EQ(a.findings[0].groups.size(), 2u);
  EXPECT_EQ(a.culprits, (std::vector<int>{0, 1}));
  EXPECT_NE(a.verdict.find("deadlock across process groups"), std::string::npos);
  EXPECT_NE(a.verdict.find("rank 0 at train.py:12 (step)"), std::string::npos);
  EXPECT_NE(a.verdict.find("rank 1 at train.py:12 (step)"), std::string::npos);
  // Without rank 1's default-group call it is a plain hang in the subgroup,
  // and the default group is fine: a member that never came, blamed.
  Put(dir + "/nccl_trace_rank_1",
      FakeDump({}, {{"0", "default_pg", 1, "all_reduce"}, {"1", "undefined", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_2", FakeDump({}, {{"0", "default_pg", 1, "all_reduce"}}));
  const Analysis b = Analyze(ReadDir(dir));
  EXPECT_EQ(b.culprits, std::vector<int>{1}) << b.report;
  ASSERT_EQ(b.findings.size(), 1u);
  EXPECT_EQ(b.groups[b.findings[0].groups[0]].pg, "1");
}

TEST(FrSubgroups, AGroupWaitingOnAnotherIsItsConsequence) {
  // Rank 1 stalls after subgroup [0, 1]'s #1: rank 0 waits in the
  // subgroup's #2, rank 2 alone in the default group's #2. Rank 0 is held
  // there, not late; rank 1 is missing from both (two findings, one rank).
  const std::string dir = Fresh("fr-held");
  const std::vector<FakeEntry> r0 = {{"0", "default_pg", 1, "all_reduce"},
                                     {"1", "undefined", 1, "all_reduce"},
                                     {"1", "undefined", 2, "all_reduce"}};
  Put(dir + "/nccl_trace_rank_0", FakeDump({}, r0));
  Put(dir + "/nccl_trace_rank_1",
      FakeDump({}, {{"0", "default_pg", 1, "all_reduce"}, {"1", "undefined", 1, "all_reduce"}}));
  Put(dir + "/nccl_trace_rank_2",
      FakeDump({}, {{"0", "default_pg", 1, "all_reduce"}, {"0", "default_pg", 2, "all_reduce"}}));
  const Analysis a = Analyze(ReadDir(dir));
  SCOPED_TRACE(a.report);
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  ASSERT_EQ(a.findings.size(), 2u);
  const GroupVerdict* dflt = nullptr;
  for (const GroupVerdict& g : a.groups) {
    if (g.pg == "0") dflt = &g;
  }
  ASSERT_NE(dflt, nullptr);
  EXPECT_EQ(dflt->culprits, std::vector<int>{1});  // not rank 2, who came alone
  ASSERT_EQ(dflt->held.size(), 1u);
  EXPECT_EQ(dflt->held[0].rank, 0);
  EXPECT_EQ(dflt->held[0].pg, "1");
  EXPECT_NE(dflt->line.find("rank 0 is held in process group 1 #2"), std::string::npos)
      << dflt->line;
  // Now ranks 0 and 1 disagree on the subgroup's #2 (all_reduce against
  // barrier) and both wait there: the default group's #2 misses only held
  // members, a consequence of the subgroup, with no culprit of its own.
  Put(dir + "/nccl_trace_rank_1", FakeDump({}, {{"0", "default_pg", 1, "all_reduce"},
                                                {"1", "undefined", 1, "all_reduce"},
                                                {"1", "undefined", 2, "barrier"}}));
  const Analysis c = Analyze(ReadDir(dir));
  SCOPED_TRACE(c.report);
  ASSERT_EQ(c.findings.size(), 1u);
  EXPECT_EQ(c.findings[0].klass, "op");
  EXPECT_EQ(c.groups[c.findings[0].groups[0]].pg, "1");
  EXPECT_EQ(c.culprits, std::vector<int>{1});
  for (const GroupVerdict& g : c.groups) {
    if (g.pg != "0") continue;
    EXPECT_EQ(g.klass, "held");
    EXPECT_TRUE(g.culprits.empty());
    EXPECT_NE(g.line.find("a consequence"), std::string::npos) << g.line;
  }
}

TEST(FrBadInput, TruncatedForeignMissingAndMixedDumpsAreOneLineEach) {
  const std::string src = kCorpus + "/stalled/nccl_trace_rank_";
  const std::string whole = Slurp(src + "0");
  ASSERT_GT(whole.size(), 100u);

  auto error_of = [](const std::string& dir, int world = 0) {
    try {
      ReadDir(dir, world);
    } catch (const DumpError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Truncated: cut in half.
  std::string dir = Fresh("fr-truncated");
  Put(dir + "/nccl_trace_rank_0", whole.substr(0, whole.size() / 2));
  Put(dir + "/nccl_trace_rank_1", Slurp(src + "1"));
  std::string err = error_of(dir);
  EXPECT_NE(err.find(dir + "/nccl_trace_rank_0: pickle truncated"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);

  // Foreign: a pickle of a class (GLOBAL), text, an empty file.
  dir = Fresh("fr-foreign");
  Put(dir + "/nccl_trace_rank_0", std::string("\x80\x02"
                                              "cos\nsystem\nq\x00.",
                                              15));
  err = error_of(dir);
  EXPECT_NE(err.find("opcode 0x63 ('c') is outside the Flight Recorder subset"), std::string::npos)
      << err;
  Put(dir + "/nccl_trace_rank_0", "hello, world\n");
  EXPECT_NE(error_of(dir).find("not a PyTorch Flight Recorder dump"), std::string::npos)
      << error_of(dir);
  Put(dir + "/nccl_trace_rank_0", "{\"a\": 1}");
  EXPECT_NE(error_of(dir).find("no 'entries' or 'version'"), std::string::npos) << error_of(dir);
  Put(dir + "/nccl_trace_rank_0", "{\"a\": " + std::string(100000, '['));
  EXPECT_NE(error_of(dir).find("nested deeper than 64"), std::string::npos) << error_of(dir);

  // Two jobs: rank 0 of one run beside ranks 1 and 2 of another.
  dir = Fresh("fr-mixed");
  Put(dir + "/nccl_trace_rank_0", Slurp(kCorpus + "/healthy/nccl_trace_rank_0"));
  Put(dir + "/nccl_trace_rank_1", Slurp(src + "1"));
  Put(dir + "/nccl_trace_rank_2", Slurp(src + "2"));
  err = error_of(dir);
  EXPECT_NE(err.find("dumps of two different jobs in one folder"), std::string::npos) << err;
  // Two prefixes.
  Put(dir + "/other_rank_0", Slurp(src + "0"));
  EXPECT_NE(error_of(dir).find("two sets of dumps in one folder"), std::string::npos)
      << error_of(dir);

  // Missing ranks: only the world size tells rank 3 existed.
  dir = Fresh("fr-missing");
  for (int r = 0; r < 3; ++r)
    Put(dir + "/nccl_trace_rank_" + std::to_string(r),
        Slurp(kCorpus + "/healthy/nccl_trace_rank_" + std::to_string(r)));
  EXPECT_TRUE(Analyze(ReadDir(dir)).healthy);
  const Analysis a = Analyze(ReadDir(dir, 4));
  EXPECT_FALSE(a.healthy);
  EXPECT_EQ(a.culprits, std::vector<int>{3});
  EXPECT_NE(a.verdict.find("no dump from rank 3"), std::string::npos) << a.verdict;
  EXPECT_NE(error_of(dir, 2).find("--world_size 2"), std::string::npos);

  EXPECT_NE(error_of(Fresh("fr-empty")).find("no dumps in it"), std::string::npos);

  // A group naming rank 2^31-1: refused before anything is sized by it.
  std::string cfg = Slurp(kCorpus + "/healthy/nccl_trace_rank_0");
  const std::string ranks = "[0, 1, 2]";
  ASSERT_NE(cfg.find(ranks), std::string::npos);
  dir = Fresh("fr-huge");
  Put(dir + "/nccl_trace_rank_0", cfg.replace(cfg.find(ranks) - 4, 4 + ranks.size(),
                                              std::string("\x0c\x00\x00\x00[2147483647]", 16)));
  err = error_of(dir);
  EXPECT_NE(err.find("pg_config['']"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 2147483647 outside [0, 65536)"), std::string::npos) << err;

  // Hostile ids: a collective_seq_id of 10^18 beside 1 is two collectives to
  // look at, not 10^18 (this hung before the analyzer walked recorded ids).
  dir = Fresh("fr-far");
  auto one = [](int64_t seq) {
    pickle::PickleWriter w;
    w.BeginDict();
    w.Str("version");
    w.Str("2.10");
    w.Str("entries");
    w.BeginList();
    w.BeginDict();
    w.Str("process_group");
    w.BeginTuple();
    w.Str("0");
    w.Str("default_pg");
    w.EndTuple();
    w.Str("collective_seq_id");
    w.Int(seq);
    w.Str("profiling_name");
    w.Str("gloo:barrier");
    w.Str("state");
    w.Str("scheduled");
    w.EndDict();
    w.EndList();
    w.EndDict();
    return w.Finish();
  };
  Put(dir + "/nccl_trace_rank_0", one(1));
  Put(dir + "/nccl_trace_rank_1", one(int64_t{1} << 60));
  const Analysis far = Analyze(ReadDir(dir));
  EXPECT_FALSE(far.healthy);
  EXPECT_EQ(far.culprits, std::vector<int>{0});  // rank 0 never entered #2^60 (even split)
  Put(dir + "/nccl_trace_rank_1",
      "{\"version\": \"2.10\", \"entries\": [{\"process_group\": [\"0\", \"\"], "
      "\"collective_seq_id\": 1e300}]}");
  EXPECT_NE(error_of(dir).find("collective_seq_id: a number, not an integer"), std::string::npos)
      << error_of(dir);
}

TEST(FrJson, TheJsonFormReadsLikeThePickle) {
  // _dump_fr_trace_json(): the same dict as JSON (no frames; pg_status as text).
  const std::string dir = Fresh("fr-json");
  const std::string json =
      R"({"version":"2.10","pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0, 1]"}},)"
      R"("pg_status":{"0":{"last_completed_collective":"1"}},"entries":[)"
      R"({"collective_seq_id":1,"p2p_seq_id":0,"pg_id":0,"process_group":["0","default_pg"],)"
      R"("profiling_name":"gloo:all_reduce","record_id":0,"input_sizes":[[4]],"output_sizes":[[4]],)"
      R"("input_dtypes":["Float"],"output_dtypes":["Float"],"state":"scheduled","time_created_ns":1,"is_p2p":false}X]})";
  const std::string second =
      R"(,{"collective_seq_id":2,"p2p_seq_id":0,"pg_id":0,"process_group":["0","default_pg"],)"
      R"("profiling_name":"gloo:all_reduce","record_id":1,"input_sizes":[[4]],"output_sizes":[[4]],)"
      R"("input_dtypes":["Float"],"output_dtypes":["Float"],"state":"scheduled","time_created_ns":2,"is_p2p":false})";
  std::string r0 = json, r1 = json;
  r0.replace(r0.find('X'), 1, second);
  r1.replace(r1.find('X'), 1, "");
  Put(dir + "/nccl_trace_rank_0", r0);
  Put(dir + "/nccl_trace_rank_1", r1);
  const DirDumps d = ReadDir(dir);
  EXPECT_EQ(d.by_rank[0]->format, "json");
  EXPECT_EQ(d.by_rank[0]->last_completed.at("0"), 1);
  const Analysis a = Analyze(d);
  // An even split (rank 0 entered #2, rank 1 never did): the one that never came.
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  EXPECT_EQ(a.groups.at(0).seq, 2);
  EXPECT_NE(a.verdict.find("(an even split:"), std::string::npos) << a.verdict;
}

// One suite dump of `world` ranks: rank r's first n collectives (allreduce
// of 497 doubles), the second one timed out.
RankDump SuiteDump(int r, int world, int n) {
  RankDump d;
  d.rank = r;
  d.world_size = world;
  CommTrace c;
  c.name = "comm0";
  c.backend = "gloo";
  c.rank = r;
  c.world_size = world;
  c.deadline_s = 2;
  for (int s = 0; s < n; ++s) {
    TraceEntry e;
    e.seq = s;
    e.op = comm::OpKind::kAllreduce;
    e.dtype = comm::DType::kFloat64;
    e.count = 497;
    e.state = s == 1 ? State::kTimedOut : State::kCompleted;
    e.enter_unix_s = 1000 + s;
    e.site = {"repro/drop_last_hang/hang_run.cc", 142 + s, "void RankMain(int)"};
    c.entries.push_back(e);
  }
  c.next_seq = n;
  d.comms.push_back(c);
  return d;
}

TEST(ToFr, TheSuitesDumpsReadBackAsPyTorchDumps) {
  // Rank 1 of two never entered the suite's collective #1 (seq from 0):
  // written as PyTorch's pickles, our own reader finds the same.
  std::vector<std::optional<RankDump>> dumps = {SuiteDump(0, 2, 2), SuiteDump(1, 2, 1)};
  const std::string dir = Fresh("to-fr");
  const auto paths = WriteFrDir(dumps, dir);
  ASSERT_EQ(paths.size(), 2u);
  const DirDumps back = ReadDir(dir);
  const Entry& e = back.by_rank[0]->entries.at(1);
  EXPECT_EQ(e.profiling_name, "gloo:all_reduce");
  EXPECT_EQ(e.seq, 2);
  EXPECT_EQ(e.input_dtypes, std::vector<std::string>{"Double"});
  EXPECT_EQ(e.input_sizes, (std::vector<std::vector<int64_t>>{{497}}));
  EXPECT_EQ(SiteOf(e), "repro/drop_last_hang/hang_run.cc:143 (RankMain)");
  const Analysis a = Analyze(back);
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  EXPECT_EQ(a.groups.at(0).seq, 2);
}

TEST(Pickle, DecodesTheSubsetAndRejectsTheRest) {
  pickle::PickleWriter w;
  w.BeginDict();
  w.Str("a");
  w.BeginList();
  w.Int(1);
  w.Int(-70000);
  w.Int(int64_t{1} << 60);
  w.Float(2.5);
  w.None();
  w.Bool(true);
  w.BeginTuple();
  w.Str("x");
  w.Str("y");
  w.EndTuple();
  w.EndList();
  w.EndDict();
  const std::string bytes = w.Finish();
  const pickle::PickleDoc doc(bytes);
  const pickle::Value* a = doc.Root().Get("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 7u);
  EXPECT_EQ(a->items()[0]->i, 1);
  EXPECT_EQ(a->items()[1]->i, -70000);
  EXPECT_EQ(a->items()[2]->i, int64_t{1} << 60);
  EXPECT_EQ(a->items()[3]->f, 2.5);
  EXPECT_TRUE(a->items()[4]->Is(pickle::Value::Kind::kNone));
  EXPECT_EQ(a->items()[5]->i, 1);
  EXPECT_EQ(a->items()[6]->items()[1]->s, "y");

  auto error_of = [](const std::string& b) {
    try {
      pickle::PickleDoc d(b);
    } catch (const pickle::PickleError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(bytes.substr(0, bytes.size() - 3)).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(bytes + "N").find("trailing bytes"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x02R.", 4)).find("opcode 0x52 ('R')"),
            std::string::npos);  // REDUCE
  EXPECT_NE(error_of(std::string("\x80\x01N.", 4)).find("protocol 1"), std::string::npos);
  EXPECT_NE(error_of("}.").find("not a pickle"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x02h\x07.", 5)).find("memo index 7 unset"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x02\x8a\x09", 4)).find("more than 64 bits"),
            std::string::npos);
  // A bound on objects, whatever the bytes claim.
  std::string many = "\x80\x02](";
  for (int i = 0; i < 100; ++i) many += 'N';
  many += "e.";
  EXPECT_NE(
      [&] {
        try {
          pickle::PickleDoc d(many, 50);
        } catch (const pickle::PickleError& e) {
          return std::string(e.what());
        }
        return std::string();
      }()
          .find("more than 50 objects"),
      std::string::npos);
}

// Issue 59 (8): on a full disk --to-fr left one file of three (and trace
// then blamed ranks [1, 2] instead of rank 2), and rank files already in
// OUT were kept beside the new ones. Now whole or not at all, and OUT must
// be new or empty. The "full disk" is RLIMIT_FSIZE in a child: rank 0's
// small file fits, rank 1's does not.
TEST(ToFr, WritesEveryFileOrNoneAndRefusesStaleFiles) {
  const std::vector<std::optional<RankDump>> dumps = {SuiteDump(0, 3, 1), SuiteDump(1, 3, 400),
                                                      SuiteDump(2, 3, 1)};
  const std::string parent = Fresh("to-fr-whole");
  const std::string out = parent + "/out";
  const std::size_t small = ToFrPickle(*dumps[0]).size(), big = ToFrPickle(*dumps[1]).size();
  ASSERT_LT(small * 2, big);
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{small * 2, small * 2};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      WriteFrDir(dumps, out);
    } catch (const DumpError& e) {
      ::_exit(std::string(e.what()).find("File too large") != std::string::npos ? 0 : 4);
    }
    ::_exit(3);  // written whole despite the limit: the test is wrong
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a failed --to-fr left part of its output";
  for (const auto& f : std::filesystem::directory_iterator(parent)) {
    ADD_FAILURE() << "left behind: " << f.path();
  }
  // Whole: every file, and they read back as one world.
  ASSERT_EQ(WriteFrDir(dumps, out).size(), 3u);
  EXPECT_EQ(ReadDir(out).by_rank.size(), 3u);
  // A folder that already holds files (a stale rank) is refused, named,
  // and left as it was.
  Put(out + "/nccl_trace_rank_5", "stale");
  try {
    WriteFrDir(dumps, out);
    FAIL() << "wrote into a folder with a stale rank file";
  } catch (const DumpError& e) {
    EXPECT_EQ(std::string(e.what()), out + " already holds nccl_trace_rank_0 and 3 more: give a "
                                           "new or empty folder (its files would be mixed with "
                                           "the new dumps)");
  }
  EXPECT_EQ(Slurp(out + "/nccl_trace_rank_5"), "stale");
  // An empty folder is fine.
  const std::string empty = Fresh("to-fr-empty");
  EXPECT_EQ(WriteFrDir(dumps, empty + "/").size(), 3u);
  EXPECT_EQ(ReadDir(empty).by_rank.size(), 3u);
}

// A minimal dump of two completed all_reduces (seq 1 and 2), the first
// entered at t_ns, both with this timeout_ms.
std::string TwoCollectives(int64_t t_ns, int64_t timeout_ms) {
  pickle::PickleWriter w;
  w.BeginDict();
  w.Str("version");
  w.Str("2.10");
  w.Str("entries");
  w.BeginList();
  for (int64_t seq : {1, 2}) {
    w.BeginDict();
    w.Str("collective_seq_id");
    w.Int(seq);
    w.Str("process_group");
    w.BeginTuple();
    w.Str("0");
    w.Str("default_pg");
    w.EndTuple();
    w.Str("profiling_name");
    w.Str("gloo:all_reduce");
    w.Str("state");
    w.Str("completed");
    w.Str("time_created_ns");
    w.Int(t_ns + seq);
    w.Str("timeout_ms");
    w.Int(timeout_ms);
    w.EndDict();
  }
  w.EndList();
  w.EndDict();
  return w.Finish();
}

// Issue 59 (11): timeout_ms = INT64_MAX (no timeout) overflowed the bound
// on how far apart two ranks may enter one collective, and two ranks 10 s
// apart became "dumps of two different jobs".
TEST(FrBadInput, AnUnboundedTimeoutIsNoProofOfTwoJobs) {
  const std::string dir = Fresh("fr-int64-timeout");
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  Put(dir + "/nccl_trace_rank_0", TwoCollectives(1'000'000'000'000, kMax));
  Put(dir + "/nccl_trace_rank_1", TwoCollectives(1'010'000'000'000, kMax));
  EXPECT_EQ(ReadDir(dir).by_rank.size(), 2u);
  // A real bound still tells two jobs apart: 3 s of timeout, 10 s apart.
  Put(dir + "/nccl_trace_rank_0", TwoCollectives(1'000'000'000'000, 3000));
  Put(dir + "/nccl_trace_rank_1", TwoCollectives(1'010'000'000'000, 3000));
  EXPECT_THROW(ReadDir(dir), DumpError);
}

// Pickle text by hand: BINUNICODE of s.
std::string U(std::string_view s) {
  std::string out = "X";
  const auto n = static_cast<uint32_t>(s.size());
  for (int k = 0; k < 4; ++k) out += static_cast<char>((n >> (8 * k)) & 0xff);
  return out.append(s);
}

// Issue 59 (7): a dump whose entries list repeats one memoised entry (two
// bytes each, BINGET) was read into a full Entry per repeat: 8 MB of pickle
// took 2.6 GB and 37 s, and several such files ended in std::bad_alloc naming
// no file. What reading keeps is now bounded by 16 x the file's size: this
// 2 MB file (1 M repeats; about 650 MB before) is refused, naming the file.
TEST(FrBadInput, AMemoisedEntryRepeatedIsRefusedWithinAMultipleOfTheFileSize) {
  std::string b = std::string("\x80\x02}(", 4) + U("version") + U("2.15") + U("entries") + "](";
  b += "}(" + U("collective_seq_id") + "K\x01" + U("process_group") + "(" + U("0") +
       U("default_pg") + "t" + U("profiling_name") + U("gloo:all_reduce") + U("state") +
       U("completed") + "u" + std::string("q\x00", 2);
  for (int i = 1; i < 1'000'000; ++i) b += std::string("h\x00", 2);
  b += "eu.";
  try {
    ParseDump(b, "dir/nccl_trace_rank_0", 0);
    FAIL() << "read";
  } catch (const DumpError& e) {
    EXPECT_NE(std::string(e.what()).find("dir/nccl_trace_rank_0: reads into more than 31 MiB (16 "
                                         "x its size + 1 MiB)"),
              std::string::npos)
        << e.what();
  }
  // The same entry three times is a dump (a bound, not a ban on the memo).
  std::string few = b.substr(0, b.find("h\x00")) + std::string("h\x00h\x00", 4) + "eu.";
  EXPECT_EQ(ParseDump(few, "f", 0).entries.size(), 3u);
}

// The decoder's own memory is bounded the same way: far memo indices
// (LONG_BINPUT at the memo's size + 1024, five bytes each) grew the memo by
// 8 KiB per opcode, 1600 x the bytes.
TEST(Pickle, MemoryIsBoundedByAMultipleOfTheBytes) {
  std::string b = std::string("\x80\x02N", 3);
  for (uint32_t idx = 1024; idx < 1024 * 20'000; idx += 1025) {
    b += 'r';
    for (int k = 0; k < 4; ++k) b += static_cast<char>((idx >> (8 * k)) & 0xff);
  }
  b += ".";
  const std::size_t limit = 32 * b.size() + (1 << 20);
  try {
    pickle::PickleDoc d(b, 8'000'000, limit);
    FAIL() << "decoded";
  } catch (const pickle::PickleError& e) {
    EXPECT_NE(std::string(e.what()).find("objects taking more than 4 MiB of memory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddp::trace::fr
