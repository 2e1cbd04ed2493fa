#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/metrics/binary.h"
#include "core/metrics/score_csv.h"
#include "core/metrics/streaming.h"
#include "gtest/gtest.h"

namespace ddp::metrics {
namespace {

std::string Message(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RocAuc, HandComputedTies) {
  // Pairs (pos, neg): (0.5, 0.5) tie = 1/2, (0.5, 0.1) = 1, (0.9, 0.5) = 1,
  // (0.9, 0.1) = 1 -> 3.5 / 4.
  const std::vector<double> s = {0.5, 0.9, 0.5, 0.1};
  const std::vector<int> y = {1, 1, 0, 0};
  EXPECT_DOUBLE_EQ(RocAuc(s, y), 0.875);
  // AP: thresholds 0.9 (tp 1, fp 0) and 0.5 (tp 2, fp 1): (1*1 + 1*2/3) / 2.
  EXPECT_DOUBLE_EQ(AveragePrecision(s, y), (1.0 + 2.0 / 3.0) / 2.0);
}

TEST(RocAuc, BadInputMirrorsSklearn) {
  const std::vector<double> s = {0.1, 0.2};
  EXPECT_EQ(Message([&] { RocAuc(s, std::vector<int>{1, 1}); }),
            "Only one class present in y_true. ROC AUC score is not defined in that case.");
  EXPECT_EQ(Message([&] { RocAuc(std::vector<double>{}, std::vector<int>{}); }),
            "Found array with 0 sample(s) (shape=(0,)) while a minimum of 1 is required.");
  EXPECT_EQ(Message([&] { RocAuc(s, std::vector<int>{1}); }),
            "Found input variables with inconsistent numbers of samples: [1, 2]");
  EXPECT_EQ(Message([&] { RocAuc(std::vector<double>{0.1, NAN}, std::vector<int>{0, 1}); }),
            "Input contains NaN.");
  EXPECT_EQ(Message([&] { RocAuc(s, std::vector<int>{0, 2}); }),
            "labels must be 0 or 1, got 2 at position 1");
  EXPECT_NE(Message([&] { AveragePrecision(s, std::vector<int>{0, 0}); }), "");
  EXPECT_EQ(AveragePrecision(s, std::vector<int>{1, 1}), 1.0);
}

TEST(Accuracy, CountsMatches) {
  EXPECT_DOUBLE_EQ(Accuracy(std::vector<int>{0, 2, 1}, std::vector<int>{0, 2, 2}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(BinaryAccuracy(std::vector<double>{0.5, 0.49}, std::vector<int>{1, 0}), 1.0);
  EXPECT_THROW(Accuracy(std::vector<int>{}, std::vector<int>{}), std::invalid_argument);
}

TEST(SumCount, MeanOfMeansIsBiasedSumCountIsNot) {
  // Rank 0 holds 3 values, rank 1 holds 1: the mean of the two means differs
  // from the global mean; merging (sum, count) reproduces it exactly.
  SumCount a, b, all;
  for (double v : {1.0, 2.0, 3.0}) a.Add(v), all.Add(v);
  b.Add(10.0), all.Add(10.0);
  EXPECT_DOUBLE_EQ((a.Mean() + b.Mean()) / 2, 6.0);
  SumCount merged = SumCount::Unpack(a.Pack());
  merged.Merge(SumCount::Unpack(b.Pack()));
  EXPECT_EQ(merged.Mean(), all.Mean());
  EXPECT_DOUBLE_EQ(merged.Mean(), 4.0);
  EXPECT_EQ(merged.Count(), 4);
  EXPECT_THROW(SumCount().Mean(), std::domain_error);
  EXPECT_THROW(SumCount::Unpack({1.0, 0.5}), std::invalid_argument);
}

TEST(SumCount, CompensatedSumSurvivesCancellation) {
  SumCount s;
  s.Add(1e20);
  for (int i = 0; i < 1000; ++i) s.Add(1.0);
  s.Add(-1e20);
  EXPECT_EQ(s.Sum(), 1000.0);
}

std::string TempFile(const std::string& name, const std::string& contents) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

TEST(ScoreCsv, RoundTripsAndConcatenates) {
  ScoredLabels data{{0.1, 1.0 / 3.0, -2.5e-300}, {0, 1, 1}};
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/rt.csv";
  WriteScoreCsv(path, data);
  ScoredLabels back;
  ReadScoreCsv(path, &back);
  ReadScoreCsv(TempFile("swapped.csv", "label,id,score\r\n1.0,7,0.25\r\n"), &back);
  EXPECT_EQ(back.scores, (std::vector<double>{0.1, 1.0 / 3.0, -2.5e-300, 0.25}));
  EXPECT_EQ(back.labels, (std::vector<int>{0, 1, 1, 1}));
}

TEST(ScoreCsv, ErrorsNameFileAndLine) {
  ScoredLabels out;
  const std::string bad_label = TempFile("bad_label.csv", "score,label\n0.5,1\n0.2,2\n");
  EXPECT_EQ(Message([&] { ReadScoreCsv(bad_label, &out); }),
            bad_label + ":3: label must be 0 or 1, got '2'");
  const std::string bad_score = TempFile("bad_score.csv", "score,label\n0.5x,1\n");
  EXPECT_EQ(Message([&] { ReadScoreCsv(bad_score, &out); }),
            bad_score + ":2: score is not a finite number: '0.5x'");
  const std::string no_column = TempFile("no_column.csv", "score,y\n0.5,1\n");
  EXPECT_NE(Message([&] { ReadScoreCsv(no_column, &out); }).find(no_column + ":1: header"),
            std::string::npos);
  const std::string header_only = TempFile("header_only.csv", "score,label\n");
  EXPECT_EQ(Message([&] { ReadScoreCsv(header_only, &out); }),
            header_only + ":1: no data rows after the header");
  const std::string empty = TempFile("empty.csv", "");
  EXPECT_NE(Message([&] { ReadScoreCsv(empty, &out); }).find("empty file"), std::string::npos);
  const std::string short_row = TempFile("short.csv", "score,label\n0.5\n");
  EXPECT_EQ(Message([&] { ReadScoreCsv(short_row, &out); }),
            short_row + ":2: expected 2 fields, got 1");
  EXPECT_EQ(Message([&] { ReadScoreCsv("/nonexistent/x.csv", &out); }),
            "/nonexistent/x.csv: cannot open file");
}

}  // namespace
}  // namespace ddp::metrics
