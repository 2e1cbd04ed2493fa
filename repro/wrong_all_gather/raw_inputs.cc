// raw_inputs: writes the scores and labels that raw_unequal's ranks gather
// (every sample once, in index order) as JSON, so that PyTorch's evidence
// script for the same bug (pytorch/unequal_all_gather.py) gathers exactly
// these values: the same one-process AUC on both engines, in either dtype.
//
//   bazel run //repro/wrong_all_gather:raw_inputs -- --out $PWD/repro/wrong_all_gather/raw_inputs.json
//
// Scores are written as C99 hex floats (exact: Python's float.fromhex gives
// back the same double), beside their float32 rounding (what a float32
// gather sends), so a reader can check its own rounding against ours.
#include <cstdio>
#include <string>
#include <vector>

#include "core/cli/flags.h"
#include "repro/wrong_all_gather/scenario.h"

namespace {

using ddp::wrong_all_gather::Compute;
using ddp::wrong_all_gather::Config;
using ddp::wrong_all_gather::Metrics;
using ddp::wrong_all_gather::Prediction;

std::string Hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string MetricsJson(const Metrics& m) {
  if (!m.defined) return "{\"defined\": false}";
  char buf[128];
  std::snprintf(buf, sizeof buf, "{\"auc\": %.17g, \"ap\": %.17g}", m.auc, m.ap);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 1003;
  int64_t seed = 0;
  std::string out;
  ddp::cli::Flags flags(
      "raw_inputs",
      "Writes every sample's score and label (index order) as repro/wrong_all_gather's\n"
      "raw_unequal gathers them, for PyTorch's unequal_all_gather.py to read the same.");
  flags.Int64("n", &n, "samples (the post's row: 1003)", 1, 1000000);
  flags.Int64("seed", &seed, "the dataset's seed (raw_unequal uses --seed, default 0)", 0,
              1000000);
  flags.String("out", &out, "the JSON file to write (required)");
  flags.ParseOrExit(argc, argv);
  if (out.empty()) {
    std::fprintf(stderr, "raw_inputs: --out is required (the JSON file to write)\n");
    return 2;
  }
  // World size 1 with strided sharding: rank 0 holds samples 0..N-1 in
  // order, through the same RankShare every rank of raw_unequal calls.
  Config c;
  c.n = n;
  c.world_size = 1;
  c.sharding = ddp::wrong_all_gather::Sharding::kStrided;
  c.seed = static_cast<uint64_t>(seed);
  const std::vector<Prediction> all = Flatten(RankShare(c, 0));
  std::vector<double> scores, scores32;
  std::vector<int> labels;
  for (const Prediction& p : all) {
    scores.push_back(p.score);
    scores32.push_back(static_cast<float>(p.score));
    labels.push_back(p.label);
  }
  FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr) {
    std::perror(("raw_inputs: --out " + out).c_str());
    return 1;
  }
  std::fprintf(f,
               "{\n"
               "  \"what\": \"seed 000's raw unequal all_gather: every sample's score and label, "
               "index order, as repro/wrong_all_gather's raw_unequal ranks gather them (rank r "
               "holds samples r, r + W, ...); score_float32 is the score rounded to float32, "
               "what a float32 gather sends. Made by bazel run "
               "//repro/wrong_all_gather:raw_inputs; checked by raw_inputs_test\",\n"
               "  \"n\": %lld,\n  \"seed\": %lld,\n",
               static_cast<long long>(n), static_cast<long long>(seed));
  std::fprintf(f, "  \"one_process\": {\"float64\": %s, \"float32\": %s},\n",
               MetricsJson(Compute(scores, labels)).c_str(),
               MetricsJson(Compute(scores32, labels)).c_str());
  std::fprintf(f, "  \"columns\": [\"index\", \"score\", \"score_float32\", \"label\"],\n");
  std::fprintf(f, "  \"samples\": [\n");
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::fprintf(f, "    [%lld, \"%s\", \"%s\", %d]%s\n", static_cast<long long>(all[i].index),
                 Hex(scores[i]).c_str(), Hex(scores32[i]).c_str(), labels[i],
                 i + 1 < all.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) {
    std::perror(("raw_inputs: --out " + out).c_str());
    return 1;
  }
  return 0;
}
