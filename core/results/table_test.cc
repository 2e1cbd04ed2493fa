#include "core/results/table.h"

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Record Row(const std::string& variant, int n, double error) {
  Record r;
  r.bug = "wrong_all_gather";
  r.kind = Kind::kRepro;
  r.variant = variant;
  r.backend = "gloo";
  r.world_size = 4;
  r.verdict = Verdict::kReproduced;
  r.config["sharding"] = "strided_with_a_rather_long_name_for_the_sharding_scheme";
  r.config["n"] = n;
  r.config["batch_size"] = 32;
  r.config["seeds"] = 5;
  r.config["counts"] = Json::array({251, 251, 251, 250});
  r.config["note"] = "a long free-text configuration value that no terminal column could hold, n=" +
                     std::to_string(n);
  r.measured["auc"] = 0.8270905923344948;
  r.measured["error"] = error;
  r.measured["curve"] = Json(std::vector<double>(300, 0.123456789));
  r.measured["outcome"] = "r0: returned, 0/10 values not peer data, AUC 0.875000 (error +0)";
  r.reference["auc"] = 0.8270905923344948;
  return r;
}

TEST(TableTest, FitsInWidthAndKeepsTheKeyNumberWhole) {
  std::vector<Record> rows = {Row("pad_no_trim", 1003, 0.003910092465079673),
                              Row("sampler_duplicates_with_a_long_variant_name", 97, -0.0059523809)};
  const std::string text = FormatTable(rows);
  for (const auto& line : Lines(text)) {
    EXPECT_LE(line.size(), 120u) << line;
  }
  EXPECT_NE(text.find("error=0.00391009"), std::string::npos) << text;
  EXPECT_NE(text.find("error=-0.00595238"), std::string::npos) << text;
  // Shared config once, above the table; the differing config as a tag with
  // its legend line (the whole long value survives there).
  EXPECT_NE(text.find("config, every row: sharding=strided_with_a_rather_long_name"), std::string::npos)
      << text;
  EXPECT_NE(text.find("c1: n=1003 note=a long free-text configuration value"), std::string::npos)
      << text;
  EXPECT_NE(text.find("c2: n=97 "), std::string::npos) << text;
  // No curve dumped into a cell.
  EXPECT_EQ(text.find("0.1235,"), std::string::npos) << text;
}

TEST(TableTest, NarrowerWidthsStillFit) {
  std::vector<Record> rows = {Row("pad_no_trim", 1003, 0.5), Row("misaligned", 97, 0.25)};
  for (std::size_t width : {80u, 100u, 120u}) {
    for (const auto& line : Lines(FormatTable(rows, {.width = width}))) {
      EXPECT_LE(line.size(), width) << line;
    }
  }
}

TEST(TableTest, FailedAndDesynchronisedRowsPrintTheirReportUnderTheTable) {
  Record hung = Row("uneven_shards", 1025, 0.0);
  hung.measured = Json::object();
  hung.measured["detect_s"] = 2.031;
  hung.measured["message"] = "deadline exceeded on rank 0/4: allreduce seq=8";
  hung.measured["report"] = "desync report:\ncollective #8 (allreduce): ranks [1, 2, 3] never entered";
  Record failed = Row("allgatherv", 97, 0.0);
  failed.kind = Kind::kFix;
  failed.verdict = Verdict::kError;
  failed.error = "rank 2 timed out";
  Record fine = Row("pad_no_trim", 97, 0.1);
  const std::string text = FormatTable({hung, failed, fine});
  EXPECT_NE(text.find("! uneven_shards (repro, W=4): reproduced"), std::string::npos) << text;
  EXPECT_NE(text.find("      collective #8 (allreduce): ranks [1, 2, 3] never entered"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("! allgatherv (fix, W=4): error, expected exact"), std::string::npos) << text;
  EXPECT_NE(text.find("    error: rank 2 timed out"), std::string::npos) << text;
  EXPECT_EQ(text.find("! pad_no_trim"), std::string::npos) << text;
  EXPECT_NE(text.find("detect_s=2.031"), std::string::npos) << text;  // the key number
}

TEST(TableTest, VerbosePrintsEveryField) {
  const std::string text = FormatTable({Row("pad_no_trim", 1003, 0.5)}, {.verbose = true});
  EXPECT_NE(text.find("[1] repro pad_no_trim gloo W=4: reproduced"), std::string::npos) << text;
  EXPECT_NE(text.find("config.note: a long free-text configuration value that no terminal column could hold, n=1003"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("measured.curve: [0.123456789,"), std::string::npos) << text;
  EXPECT_NE(text.find("reference.auc: 0.827090592334"), std::string::npos) << text;
  EXPECT_EQ(FormatTable({Row("pad_no_trim", 1003, 0.5)}).find("measured.curve"), std::string::npos);
}

}  // namespace
}  // namespace ddp::results
