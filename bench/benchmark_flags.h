// Google Benchmark's --benchmark_* flags for the multi-rank benchmarks,
// checked once, in the launching process, before any rank starts.
//
// Google Benchmark runs inside every rank; a value it rejects or misreads
// there (a negative repetition count, an unknown format, a broken regex)
// used to crash the ranks or end a run with empty results and exit 0. Here
// every flag is split off argv, checked, and either kept (a binary then
// hands it to the ranks) or refused with a message naming the flag and its
// allowed values: exit 2.
#pragma once

#include <string>
#include <vector>

namespace ddp::bench {

struct BenchmarkFlags {
  std::vector<char*> ours;        // argv[0] and every argument that is not --benchmark_*
  std::vector<std::string> args;  // the checked --benchmark_* flags, out= made absolute
  std::string filter;             // --benchmark_filter value ("" = all)
  bool list_tests = false;
  std::string format = "console";  // --benchmark_format
  std::string out;                 // --benchmark_out (absolute), "" when not given
  int repetitions = 1;
};

// Splits and checks argv. `allowed` lists the flag names this binary takes
// (without "--"); any other --benchmark_* flag is refused. Returns "" or the
// error message.
std::string ParseBenchmarkFlags(int argc, char** argv, const std::vector<std::string>& allowed,
                                BenchmarkFlags* out);

// The flags every multi-rank benchmark can take.
std::vector<std::string> CommonBenchmarkFlags();

// Whether Google Benchmark's --benchmark_filter (a checked value: "" or "all"
// selects everything, a leading '-' negates, otherwise a POSIX extended regex
// searched in the name) selects a benchmark of this name. A binary checks its
// names before any rank starts, so a filter that selects nothing is exit 2,
// not a run with empty results.
bool FilterSelects(const std::string& filter, const std::string& name);

}  // namespace ddp::bench
