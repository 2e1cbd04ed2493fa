// AUC, AP and accuracy against values computed by scikit-learn 1.2.1
// (golden/gen_golden.py): random scores, heavy ties, all-tied, perfect and
// reversed rankings, one-class inputs, and two 1e5-sample formula cases.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/metrics/binary.h"
#include "gtest/gtest.h"

namespace ddp::metrics {
namespace {

constexpr double kTolerance = 1e-12;

struct Case {
  std::string name;
  int64_t n = 0;
  std::string source;
  std::string auc, ap, acc;  // the text after the keyword
  std::vector<double> scores;
  std::vector<int> labels;
};

// The integer formulas of gen_golden.py's formula_scores.
void Formula(const std::string& name, int64_t n, Case* c) {
  for (int64_t i = 0; i < n; ++i) {
    if (name == "ties1009") {
      const int64_t a = (i * 7919) % 1009;
      c->scores.push_back(static_cast<double>(a) / 1009.0);
      c->labels.push_back(a + (i * 104729) % 613 > 800 ? 1 : 0);
    } else if (name == "distinct32") {
      const int64_t a = (i * 2654435761LL) % (int64_t{1} << 32);
      c->scores.push_back(static_cast<double>(a) / 4294967296.0);
      c->labels.push_back((a >> 20) + (i * 40503) % 4096 > 4096 ? 1 : 0);
    } else {
      FAIL() << "unknown formula " << name;
    }
  }
}

std::vector<Case> ReadCases() {
  const std::string path =
      std::string(std::getenv("TEST_SRCDIR")) + "/ddp_pitfalls/core/metrics/golden/metrics_golden.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Case> cases;
  std::string line;
  Case current;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string word;
    fields >> word;
    auto rest = [&] { return line.substr(line.find(' ') + 1); };
    if (word == "case") {
      current = Case();
      fields >> current.name >> current.n;
    } else if (word == "source") {
      fields >> current.source;
      if (current.source != "rows") Formula(current.source, current.n, &current);
    } else if (word == "auc") {
      current.auc = rest();
    } else if (word == "ap") {
      current.ap = rest();
    } else if (word == "acc") {
      current.acc = rest();
    } else if (word == "end") {
      EXPECT_EQ(static_cast<int64_t>(current.scores.size()), current.n) << current.name;
      cases.push_back(current);
    } else {
      current.scores.push_back(std::stod(word));
      int label = -1;
      fields >> label;
      current.labels.push_back(label);
    }
  }
  return cases;
}

std::string ErrorOf(double (*metric)(std::span<const double>, std::span<const int>),
                    const Case& c) {
  try {
    metric(c.scores, c.labels);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsGolden, MatchesSklearn) {
  const std::vector<Case> cases = ReadCases();
  ASSERT_EQ(cases.size(), 14u);
  int values = 0, errors = 0;
  double max_diff = 0.0;
  auto check = [&](double got, const std::string& want) {
    const double diff = std::abs(got - std::stod(want));
    max_diff = std::max(max_diff, diff);
    EXPECT_LE(diff, kTolerance) << "got " << got << " sklearn " << want;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    if (c.auc.rfind("error ", 0) == 0) {
      EXPECT_EQ(ErrorOf(RocAuc, c), c.auc.substr(6));  // sklearn's exact message
      ++errors;
    } else {
      check(RocAuc(c.scores, c.labels), c.auc);
      ++values;
    }
    if (c.ap.rfind("warning ", 0) == 0) {
      // sklearn warns and returns -0.0 for no positives; we refuse (binary.h).
      EXPECT_NE(ErrorOf(AveragePrecision, c).find("No positive class found in y_true"),
                std::string::npos);
      ++errors;
    } else {
      check(AveragePrecision(c.scores, c.labels), c.ap);
      ++values;
    }
    EXPECT_EQ(BinaryAccuracy(c.scores, c.labels, 0.5), std::stod(c.acc));
  }
  EXPECT_EQ(values, 24);
  EXPECT_EQ(errors, 4);
  std::printf("max |ours - sklearn| over AUC and AP values: %.3g\n", max_diff);
}

TEST(MetricsGolden, OrderOfSamplesDoesNotMatter) {
  // The distributed fixes gather samples in rank order, not dataset order.
  for (const Case& c : ReadCases()) {
    if (c.name != "ties_2000" && c.name != "ties1009_100000") continue;
    Case reversed = c;
    std::reverse(reversed.scores.begin(), reversed.scores.end());
    std::reverse(reversed.labels.begin(), reversed.labels.end());
    EXPECT_NEAR(RocAuc(reversed.scores, reversed.labels), std::stod(c.auc), kTolerance);
    EXPECT_NEAR(AveragePrecision(reversed.scores, reversed.labels), std::stod(c.ap), kTolerance);
  }
}

}  // namespace
}  // namespace ddp::metrics
