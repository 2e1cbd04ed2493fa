#include "core/results/record.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

Record MakeRecord(Kind kind, Verdict v, bool control = false) {
  Record r;
  r.bug = "mean_of_means";
  r.kind = kind;
  r.variant = "naive";
  r.backend = "gloo";
  r.world_size = 4;
  r.control = control;
  r.verdict = v;
  return r;
}

TEST(RecordTest, ExitStatusNeedsEveryExpectedVerdict) {
  EXPECT_EQ(ExitStatus({MakeRecord(Kind::kRepro, Verdict::kReproduced)}), 0);
  EXPECT_EQ(ExitStatus({MakeRecord(Kind::kFix, Verdict::kExact),
                        MakeRecord(Kind::kRepro, Verdict::kControl, true)}),
            0);
  EXPECT_EQ(ExitStatus({MakeRecord(Kind::kRepro, Verdict::kReproduced),
                        MakeRecord(Kind::kRepro, Verdict::kNotReproduced)}),
            1);
  EXPECT_EQ(ExitStatus({MakeRecord(Kind::kFix, Verdict::kError)}), 1);
  EXPECT_EQ(ExitStatus({MakeRecord(Kind::kRepro, Verdict::kReproduced, true)}), 1);
  EXPECT_EQ(ExitStatus({}), 1);
}

// A fix's variant that runs a known-inexact setting expects `inexact`.
TEST(RecordTest, ExpectedVerdictOverridesTheKind) {
  Record r = MakeRecord(Kind::kFix, Verdict::kInexact);
  EXPECT_EQ(ExitStatus({r}), 1);
  r.expected = Verdict::kInexact;
  EXPECT_EQ(ExitStatus({r}), 0);
  EXPECT_EQ(ToJson(r, Provenance{}).at("expected_verdict").get<std::string>(), "inexact");
  r.verdict = Verdict::kExact;
  EXPECT_EQ(ExitStatus({r}), 1);
  EXPECT_EQ(Find(ToJson(MakeRecord(Kind::kFix, Verdict::kExact), Provenance{}), "expected_verdict"),
            nullptr);
}

TEST(RecordTest, WritesTheSchemaAtomically) {
  Record r = MakeRecord(Kind::kRepro, Verdict::kError);
  r.error = "rank 2 timed out";
  r.measured["auc"] = 0.5;
  Provenance p;
  p.commit = "abc";
  p.tcp_congestion = "cubic";
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/out.json";
  ASSERT_EQ(WriteRecords(path, {r}, p), "");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  for (const char* key : {"\"bug\"", "\"kind\": \"repro\"", "\"variant\"", "\"backend\"",
                          "\"world_size\": 4", "\"config\"", "\"measured\"", "\"reference\"",
                          "\"verdict\": \"error\"", "\"error\": \"rank 2 timed out\"",
                          "\"provenance\"", "\"commit\": \"abc\"",
                          "\"tcp_congestion\": \"cubic\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << "\n" << text;
  }
  EXPECT_NE(WriteRecords("/nonexistent-dir/x.json", {r}, p), "");
}

TEST(RecordTest, ProvenanceIsFilledIn) {
  const Provenance p = CollectProvenance();
  EXPECT_FALSE(p.date.empty());
  EXPECT_FALSE(p.host.empty());
  EXPECT_FALSE(p.cpu.empty());
  EXPECT_FALSE(p.gpu.empty());
  EXPECT_NE(p.gloo.find("0.5"), std::string::npos);
  EXPECT_FALSE(p.tcp_congestion.empty());
}

}  // namespace
}  // namespace ddp::results
