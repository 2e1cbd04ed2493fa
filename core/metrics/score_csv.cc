#include "core/metrics/score_csv.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace ddp::metrics {
namespace {

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whole-field parse; false for empty, partial or out-of-range text.
bool ParseDouble(std::string_view text, double* value) {
  if (text.empty()) return false;
  if (text.front() == '+') text.remove_prefix(1);  // from_chars rejects '+'
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

void ReadScoreCsv(const std::string& path, ScoredLabels* out) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open file");
  auto fail = [&](int line, const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
  };
  std::string text;
  int line_number = 0;
  int score_column = -1, label_column = -1;
  size_t columns = 0;
  int64_t rows = 0;
  while (std::getline(in, text)) {
    ++line_number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const std::vector<std::string_view> fields = Split(text);
    if (line_number == 1) {
      columns = fields.size();
      for (size_t c = 0; c < fields.size(); ++c) {
        const std::string_view name = Trim(fields[c]);
        if (name == "score") score_column = static_cast<int>(c);
        if (name == "label") label_column = static_cast<int>(c);
      }
      if (score_column < 0 || label_column < 0) {
        fail(1, std::string("header must name the columns 'score' and 'label' (missing '") +
                    (score_column < 0 ? "score" : "label") + "'), got '" + text + "'");
      }
      continue;
    }
    if (Trim(text).empty()) fail(line_number, "empty line");
    if (fields.size() != columns) {
      fail(line_number, "expected " + std::to_string(columns) + " fields, got " +
                            std::to_string(fields.size()));
    }
    double score = 0.0, label = 0.0;
    const std::string_view score_text = Trim(fields[score_column]);
    if (!ParseDouble(score_text, &score) || !std::isfinite(score)) {
      fail(line_number, "score is not a finite number: '" + std::string(score_text) + "'");
    }
    const std::string_view label_text = Trim(fields[label_column]);
    if (!ParseDouble(label_text, &label) || (label != 0.0 && label != 1.0)) {
      fail(line_number, "label must be 0 or 1, got '" + std::string(label_text) + "'");
    }
    out->scores.push_back(score);
    out->labels.push_back(label == 1.0 ? 1 : 0);
    ++rows;
  }
  if (line_number == 0) fail(1, "empty file (expected a 'score,label' header)");
  if (rows == 0) fail(line_number, "no data rows after the header");
}

void WriteScoreCsv(const std::string& path, const ScoredLabels& data) {
  if (data.scores.size() != data.labels.size()) {
    throw std::invalid_argument("WriteScoreCsv: scores and labels differ in length");
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << "score,label\n";
  char buffer[64];
  for (size_t i = 0; i < data.scores.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%.17g,%d\n", data.scores[i], data.labels[i]);
    out << buffer;
  }
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace ddp::metrics
