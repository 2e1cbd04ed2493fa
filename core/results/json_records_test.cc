// The committed records under results/ (data of this test) survive a read
// and a write with the JSON value every pair writes them with: the same
// numbers, bit for bit, in the same key order.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/results/json.h"
#include "gtest/gtest.h"

namespace ddp::results {
namespace {

std::vector<std::filesystem::path> RecordFiles() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"results", "results/vs_pytorch"}) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".json") out.push_back(e.path());
    }
  }
  return out;
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Same type, same value (doubles compared bit for bit, "nan" strings as
// strings) and the same keys in the same order.
void ExpectSame(const Json& a, const Json& b, const std::string& where) {
  ASSERT_EQ(a.type_name(), std::string(b.type_name())) << where;
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    auto ib = b.begin();
    for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
      ASSERT_EQ(ia.key(), ib.key()) << where;
      ExpectSame(ia.value(), ib.value(), where + "." + ia.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ExpectSame(a[i], b[i], where + "[" + std::to_string(i) + "]");
    }
  } else if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << where << ": " << x << " vs " << y;
  } else {
    ASSERT_EQ(a, b) << where;
  }
}

TEST(JsonRecords, EveryCommittedFileRoundTripsExactly) {
  const std::vector<std::filesystem::path> files = RecordFiles();
  ASSERT_GE(files.size(), 40u) << "the committed records are this test's data";
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    const Json first = ParseJson(Read(p));
    const Json again = ParseJson(Dump(first, 1));
    ExpectSame(first, again, p.filename().string());
  }
}

}  // namespace
}  // namespace ddp::results
