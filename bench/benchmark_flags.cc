#include "bench/benchmark_flags.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "core/results/output_file.h"

namespace ddp::bench {
namespace {

constexpr int kMaxRepetitions = 1000;

bool IsBoolFlag(const std::string& name) {
  return name == "benchmark_list_tests" || name == "benchmark_report_aggregates_only" ||
         name == "benchmark_display_aggregates_only" || name == "benchmark_counters_tabular";
}

// The value's problem ("" if none), in the words "bad value 'x' for --flag (allowed: ...)".
std::string CheckValue(const std::string& name, const std::string& value) {
  auto bad = [&](const std::string& allowed) {
    return "bad value '" + value + "' for --" + name + " (allowed: " + allowed + ")";
  };
  if (IsBoolFlag(name)) {
    const bool ok = value.empty() || value == "true" || value == "false" || value == "1" || value == "0";
    return ok ? "" : bad("true or false");
  }
  if (name == "benchmark_format" || name == "benchmark_out_format") {
    return value == "console" || value == "json" || value == "csv" ? "" : bad("one of console|json|csv");
  }
  if (name == "benchmark_color") {
    return value == "auto" || value == "true" || value == "false" ? "" : bad("one of auto|true|false");
  }
  if (name == "benchmark_repetitions") {
    char* end = nullptr;
    const long v = std::strtol(value.c_str(), &end, 10);
    const bool ok = !value.empty() && *end == '\0' && v >= 1 && v <= kMaxRepetitions;
    return ok ? "" : bad("an integer in 1.." + std::to_string(kMaxRepetitions));
  }
  if (name == "benchmark_filter") {
    // Google Benchmark compiles the filter as a POSIX extended regex; a
    // leading '-' negates it.
    const std::string re = !value.empty() && value[0] == '-' ? value.substr(1) : value;
    try {
      std::regex compiled(re, std::regex::extended);
    } catch (const std::regex_error& e) {
      return bad(std::string("a regular expression; this one does not compile: ") + e.what());
    }
    return "";
  }
  if (name == "benchmark_out") {
    if (value.empty()) return "--benchmark_out needs a path: --benchmark_out=PATH";
    const std::string err = results::CheckOutputFile(value);
    return err.empty() ? "" : "--benchmark_out=" + value + ": " + err;
  }
  return "";
}

// A relative --benchmark_out means the folder `bazel run` was started in.
std::string ResolvePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  return wd != nullptr && *wd != '\0' ? std::string(wd) + "/" + path : path;
}

}  // namespace

std::vector<std::string> CommonBenchmarkFlags() {
  return {"benchmark_filter", "benchmark_list_tests", "benchmark_format", "benchmark_out",
          "benchmark_out_format", "benchmark_repetitions", "benchmark_report_aggregates_only",
          "benchmark_display_aggregates_only", "benchmark_counters_tabular", "benchmark_color"};
}

bool FilterSelects(const std::string& filter, const std::string& name) {
  if (filter.empty() || filter == "all") return true;
  const bool negate = filter[0] == '-';
  const std::regex re(negate ? filter.substr(1) : filter, std::regex::extended);
  return std::regex_search(name, re) != negate;
}

std::string ParseBenchmarkFlags(int argc, char** argv, const std::vector<std::string>& allowed,
                                BenchmarkFlags* out) {
  *out = BenchmarkFlags{};
  out->ours.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_", 0) != 0) {
      out->ours.push_back(argv[i]);
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "--" : ", --") + a;
      return "unknown or unsupported flag --" + name +
             " (every rank must run the same benchmarks; allowed Google Benchmark flags: " + list +
             ")";
    }
    if (eq == std::string::npos && !IsBoolFlag(name)) {
      return "--" + name + " needs a value: --" + name + "=VALUE";
    }
    if (name == "benchmark_out") value = ResolvePath(value);
    if (const std::string err = CheckValue(name, value); !err.empty()) return err;
    if (name == "benchmark_filter") out->filter = value;
    if (name == "benchmark_list_tests") out->list_tests = value.empty() || value == "true" || value == "1";
    if (name == "benchmark_format") out->format = value;
    if (name == "benchmark_out") out->out = value;
    if (name == "benchmark_repetitions") out->repetitions = std::atoi(value.c_str());
    out->args.push_back(eq == std::string::npos ? arg : "--" + name + "=" + value);
  }
  return "";
}

}  // namespace ddp::bench
