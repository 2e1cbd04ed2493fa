// repro/wrong_all_gather: distributed AUC/AP that differ from one process
// (seed 000). Runs the variants of variants.cc over the rows of rows.h.
#include <string>

#include "core/harness/pair_main.h"
#include "repro/wrong_all_gather/variants.h"

int main(int argc, char** argv) {
  bool sweep = false;
  int raw_runs = 20;
  bool raw_only = false;
  std::string raw_dtype = "float64";
  ddp::harness::PairSpec spec;
  spec.program = "repro_wrong_all_gather";
  spec.summary =
      "Gathers per-rank predictions and labels the four wrong ways people do (raw unequal\n"
      "all_gather, pad without trim, misaligned orders, sampler padding counted) and compares\n"
      "the global ROC AUC and AP with the one-process values.";
  spec.add_flags = [&](ddp::cli::Flags& flags) {
    flags.Bool("sweep", &sweep, "W in {2,4,8}, N in {--n,250W,97,10}, batch in {--batch_size,7,1}");
    flags.Int("raw_runs", &raw_runs,
              "runs of raw_unequal per configuration (undefined behaviour varies by run)", 1, 1000);
    flags.Bool("raw_only", &raw_only,
               "only raw_unequal, at --n and --batch_size (per W with --sweep): many runs of "
               "what one engine does, without the other variants' worlds");
    flags.Choice("raw_dtype", &raw_dtype,
                 "what raw_unequal's gathers send: float64 (the suite's scores) or float32 (the "
                 "post's tensors): a peer short by one element is 8 or 4 bytes short",
                 {"float64", "float32"});
  };
  // raw_unequal aborts ranks on purpose (undefined behaviour in the engine):
  // under a launcher that abort would end the launcher's whole run, so the
  // repro keeps its own supervisor, which records the abort as the symptom.
  spec.spawns_own_ranks = "raw_unequal aborts ranks on purpose";
  spec.run = [&](const ddp::harness::CommonFlags& f) {
    return ddp::wrong_all_gather::RunRepro(f, sweep, raw_runs, raw_only, raw_dtype);
  };
  return ddp::harness::PairMain(argc, argv, spec);
}
