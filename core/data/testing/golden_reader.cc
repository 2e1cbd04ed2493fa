#include "core/data/testing/golden_reader.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <stdexcept>

namespace ddp::data::golden {

std::string RunfilePath(const std::string& workspace_relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir == nullptr) throw std::runtime_error("TEST_SRCDIR is not set (run under bazel test)");
  return std::string(srcdir) + "/ddp_pitfalls/" + workspace_relative;
}

std::vector<Line> ReadLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  std::vector<Line> lines;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.empty() || text[0] == '#') continue;
    const size_t colon = text.find(" : ");
    Line line;
    line.line_number = number;
    std::istringstream head(text.substr(0, colon));
    head >> line.kind;
    for (std::string field; head >> field;) line.fields.push_back(field);
    if (colon != std::string::npos) {
      line.payload = text.substr(colon + 3);
    } else if (text.size() >= 2 && text.compare(text.size() - 2, 2, " :") == 0) {
      line.payload.clear();  // "kind fields :" with an empty list
    } else {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": no ' : ' separator");
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<int64_t> ParseIndexList(const std::string& payload) {
  std::vector<int64_t> v;
  std::istringstream in(payload);
  for (int64_t x; in >> x;) v.push_back(x);
  return v;
}

std::string Digest(const std::vector<int64_t>& v) {
  uint64_t checksum = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    checksum += static_cast<uint64_t>(v[j]) * static_cast<uint64_t>(j % 1000003);
  }
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t j = from; j < to; ++j) s += (j == from ? "" : ",") + std::to_string(v[j]);
    return s;
  };
  const size_t n = v.size();
  return "count=" + std::to_string(n) + " head=" + join(0, std::min<size_t>(8, n)) +
         " tail=" + join(n > 8 ? n - 8 : 0, n) + " checksum=" + std::to_string(checksum);
}

}  // namespace ddp::data::golden
