// ParseBenchmarkFlags: the values Google Benchmark would crash on or
// misread inside the ranks are refused up front, naming the flag.
#include "bench/benchmark_flags.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace ddp::bench {
namespace {

std::string Parse(std::vector<std::string> args, BenchmarkFlags* out = nullptr) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  BenchmarkFlags ignored;
  return ParseBenchmarkFlags(static_cast<int>(argv.size()), argv.data(), CommonBenchmarkFlags(),
                             out != nullptr ? out : &ignored);
}

TEST(BenchmarkFlags, BadValuesNameTheFlagAndTheAllowedValues) {
  EXPECT_EQ(Parse({"--benchmark_repetitions=-1"}),
            "bad value '-1' for --benchmark_repetitions (allowed: an integer in 1..1000)");
  EXPECT_EQ(Parse({"--benchmark_repetitions=x"}),
            "bad value 'x' for --benchmark_repetitions (allowed: an integer in 1..1000)");
  EXPECT_EQ(Parse({"--benchmark_format=xml"}),
            "bad value 'xml' for --benchmark_format (allowed: one of console|json|csv)");
  EXPECT_EQ(Parse({"--benchmark_out_format=xml"}),
            "bad value 'xml' for --benchmark_out_format (allowed: one of console|json|csv)");
  EXPECT_NE(Parse({"--benchmark_filter=["}).find("bad value '[' for --benchmark_filter"),
            std::string::npos);
  EXPECT_NE(Parse({"--benchmark_filter=-("}).find("--benchmark_filter"), std::string::npos);
  EXPECT_NE(Parse({"--benchmark_bogus=1"}).find("unknown or unsupported flag --benchmark_bogus"),
            std::string::npos);
  EXPECT_NE(Parse({"--benchmark_min_time=1"}).find("--benchmark_min_time"), std::string::npos);
  EXPECT_EQ(Parse({"--benchmark_filter"}), "--benchmark_filter needs a value: --benchmark_filter=VALUE");
  EXPECT_EQ(Parse({"--benchmark_list_tests=maybe"}),
            "bad value 'maybe' for --benchmark_list_tests (allowed: true or false)");
  EXPECT_NE(Parse({"--benchmark_out=/nonexistent-dir/x.json"}).find("--benchmark_out"),
            std::string::npos);
  EXPECT_EQ(Parse({"--benchmark_out="}), "--benchmark_out needs a path: --benchmark_out=PATH");
}

TEST(BenchmarkFlags, GoodValuesAreKeptAndOursPassThrough) {
  BenchmarkFlags f;
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/b.json";
  ASSERT_EQ(Parse({"--world_size", "2", "--benchmark_filter=sync.*", "--benchmark_format=json",
                   "--benchmark_repetitions=3", "--benchmark_list_tests", "--benchmark_out=" + out},
                  &f),
            "");
  ASSERT_EQ(f.ours.size(), 3u);
  EXPECT_EQ(std::string(f.ours[1]), "--world_size");
  EXPECT_EQ(f.filter, "sync.*");
  EXPECT_EQ(f.format, "json");
  EXPECT_EQ(f.repetitions, 3);
  EXPECT_TRUE(f.list_tests);
  EXPECT_EQ(f.out, out);
  EXPECT_EQ(f.args.size(), 5u);
  EXPECT_EQ(Parse({"--benchmark_filter=-bn"}), "");  // negated, as Google Benchmark allows
}

TEST(BenchmarkFlags, FilterSelectsAsGoogleBenchmarkDoes) {
  EXPECT_TRUE(FilterSelects("", "bn/C:16"));
  EXPECT_TRUE(FilterSelects("all", "bn/C:16"));
  EXPECT_TRUE(FilterSelects("C:16", "sync_bn/C:16/N:2"));  // searched, not matched whole
  EXPECT_TRUE(FilterSelects("^sync_bn/", "sync_bn/C:16/N:2"));
  EXPECT_FALSE(FilterSelects("^sync_bn/", "bn/C:16/N:2"));
  EXPECT_FALSE(FilterSelects("-C:16", "sync_bn/C:16/N:2"));  // negated
  EXPECT_TRUE(FilterSelects("-C:16", "sync_bn/C:64/N:2"));
  EXPECT_FALSE(FilterSelects("no_such_benchmark", "sync_bn/C:16/N:2"));
}

}  // namespace
}  // namespace ddp::bench
