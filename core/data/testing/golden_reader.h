// Reading the golden-vector files that the gen_golden.py scripts write
// (shared by the tests of core/data and core/metrics; test-only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::data::golden {

// Path of a data file in the test's runfiles, e.g.
// RunfilePath("core/data/golden/sampler_golden.txt").
std::string RunfilePath(const std::string& workspace_relative);

// One golden line: "KIND f1 f2 ... : payload".
struct Line {
  std::string kind;
  std::vector<std::string> fields;
  std::string payload;
  int line_number = 0;
};

// All non-comment lines of the file; throws std::runtime_error if unreadable.
std::vector<Line> ReadLines(const std::string& path);

std::vector<int64_t> ParseIndexList(const std::string& payload);

// The digest the generators write: count, first/last 8 entries and
// sum_j v[j] * (j mod 1000003) mod 2^64.
std::string Digest(const std::vector<int64_t>& v);

}  // namespace ddp::data::golden
