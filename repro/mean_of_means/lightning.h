// The Lightning variant of the mean-of-means repro (see lightning.cc).
#pragma once

#include <string>
#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::mean_of_means {

// Runs LightningRows (sweep.h) on real Gloo ranks: one record per row,
// variant "lightning_int_count". Empty on any backend but gloo.
// device: --device, as RunRepro (the value sums; the int64 count stays a
// host all-reduce).
std::vector<results::Record> RunLightning(const harness::CommonFlags& flags, const std::string& device = "auto");

}  // namespace ddp::mean_of_means
