// The four ways distributed evaluation gets the global AUC wrong (seed 000).
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"
#include "repro/wrong_all_gather/rows.h"

namespace ddp::wrong_all_gather {

// Runs every variant over the rows (rows.h) on real ranks: one record per
// row and variant. raw_unequal runs `raw_runs` times per row (first seed),
// each in a world of its own since ranks may abort; undefined behaviour can
// differ from run to run, so its record counts the runs in which some rank
// returned from its first all_gather without an error but with values that
// are not peer data (silent_runs), and what rank 0's first gather held.
// raw_only: raw_unequal's records at --n and --batch_size only (the post's
// row, per W), for many runs of one engine (a lent GPU's NCCL) in little time.
// raw_dtype: what raw_unequal's gathers send, "float64" (the suite's scores)
// or "float32" (the post's tensors; PyTorch's evidence script's default).
std::vector<results::Record> RunRepro(const harness::CommonFlags& flags, bool sweep,
                                      int raw_runs = 20, bool raw_only = false,
                                      const std::string& raw_dtype = "float64");

// raw_unequal on one row (rows.h), `runs` times, its gathers in raw_dtype
// (float64 or float32; anything else is std::invalid_argument).
results::Record RawUnequalRecord(const harness::CommonFlags& flags, const Row& row, int runs,
                                 const std::string& raw_dtype = "float64");

}  // namespace ddp::wrong_all_gather
