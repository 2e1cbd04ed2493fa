// The PyTorch Flight Recorder reader and analyzer on the committed corpus
// (tools/trace/testdata/fr_corpus, written by real PyTorch 2.15 gloo jobs:
// tools/vs_pytorch/fr_corpus/run.py), scored against each scenario's
// truth.json; then bad input, the pickle subset, and --to-fr's pickles.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

const char* kScenarios[] = {"allreduce_vs_barrier", "ddp_short", "dtype_mismatch",
                            "extra_step",           "healthy",   "killed",
                            "size_mismatch",        "skip_one",  "stalled",
                            "subgroup_hang",        "uneven_ok", "w4_two_mismatch",
                            "w4_two_stalled"};

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
  for (const auto& c : truth.at("culprits"))
    culprits.push_back(static_cast<int>(c.get<double>()));
  const int world = static_cast<int>(truth.at("world_size").get<double>());

  const DirDumps dumps = ReadDir(dir);
  ASSERT_EQ(static_cast<int>(dumps.by_rank.size()), world);
  const Analysis a = Analyze(dumps);
  SCOPED_TRACE(a.report);
  EXPECT_EQ(a.healthy, truth.at("healthy").get<bool>());
  EXPECT_EQ(a.culprits, culprits);
  if (!a.healthy) {
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
  EXPECT_GE(std::size(kScenarios), 12u);
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

TEST(ToFr, TheSuitesDumpsReadBackAsPyTorchDumps) {
  // Rank 1 of two never entered the suite's collective #1 (seq from 0):
  // written as PyTorch's pickles, our own reader finds the same.
  std::vector<std::optional<RankDump>> dumps(2);
  for (int r = 0; r < 2; ++r) {
    RankDump d;
    d.rank = r;
    d.world_size = 2;
    CommTrace c;
    c.name = "comm0";
    c.backend = "gloo";
    c.rank = r;
    c.world_size = 2;
    c.deadline_s = 2;
    const int n = r == 0 ? 2 : 1;
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
    dumps[static_cast<std::size_t>(r)] = d;
  }
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

}  // namespace
}  // namespace ddp::trace::fr
