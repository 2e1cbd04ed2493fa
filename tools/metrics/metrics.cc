// Global ROC AUC and average precision (equal to scikit-learn's) of one or
// more "score,label" CSV files, e.g. the per-rank dumps of a distributed
// evaluation, concatenated.
//
//   bazel run //tools:metrics -- --csv rank0.csv --csv rank1.csv
//   auc=0.86012345678901234 ap=0.85... n=1003
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/metrics/binary.h"
#include "core/metrics/score_csv.h"

namespace {

constexpr char kUsage[] =
    "usage: metrics --csv FILE [--csv FILE2 ...]\n"
    "\n"
    "Reads CSV files whose header names the columns 'score' and 'label' (one\n"
    "row per sample; other columns are ignored), concatenates them, and prints\n"
    "  auc=<roc auc> ap=<average precision> n=<samples>\n"
    "with 17 significant digits. AUC and AP equal sklearn.metrics.roc_auc_score\n"
    "and average_precision_score (see core/metrics/README.md).\n"
    "\n"
    "  --csv FILE   a CSV file (repeatable; also --csv=FILE)\n"
    "  --help       this text\n"
    "\n"
    "Exit status 2 on bad usage or bad input (the message names file and line).\n";

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--csv") {
      if (i + 1 >= argc) Fail("--csv needs a value (a CSV file path)");
      files.push_back(argv[++i]);
    } else if (arg.rfind("--csv=", 0) == 0) {
      files.push_back(arg.substr(6));
    } else {
      Fail("unknown argument '" + arg + "' (allowed: --csv FILE, --help)");
    }
  }
  if (files.empty()) Fail("at least one --csv FILE is required (run with --help for usage)");
  ddp::metrics::ScoredLabels data;
  try {
    for (const std::string& file : files) ddp::metrics::ReadScoreCsv(file, &data);
  } catch (const std::runtime_error& e) {
    Fail(e.what());
  }
  std::string inputs;
  for (const std::string& file : files) inputs += (inputs.empty() ? "" : ", ") + file;
  try {
    const double auc = ddp::metrics::RocAuc(data.scores, data.labels);
    const double ap = ddp::metrics::AveragePrecision(data.scores, data.labels);
    std::printf("auc=%.17g ap=%.17g n=%zu\n", auc, ap, data.scores.size());
  } catch (const std::invalid_argument& e) {
    Fail(inputs + ": " + e.what());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
