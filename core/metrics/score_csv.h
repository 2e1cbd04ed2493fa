// Reading and writing "score,label" CSV files (e.g. per-rank prediction
// dumps), with errors that name the file and line.
#pragma once

#include <string>
#include <vector>

namespace ddp::metrics {

struct ScoredLabels {
  std::vector<double> scores;
  std::vector<int> labels;
};

// Appends the rows of `path` to `out`. The first line is a header naming the
// columns; it must contain `score` and `label` (any order, other columns are
// ignored). Every row must have as many fields as the header, a finite
// number in the score column and 0 or 1 (also written 0.0 / 1.0) in the
// label column. A trailing '\r' (CRLF files) is ignored. Throws
// std::runtime_error("FILE:LINE: what is wrong") on any problem, including a
// missing file and a file without data rows.
void ReadScoreCsv(const std::string& path, ScoredLabels* out);

// Writes "score,label" with 17 significant digits (round-trips exactly).
void WriteScoreCsv(const std::string& path, const ScoredLabels& data);

}  // namespace ddp::metrics
