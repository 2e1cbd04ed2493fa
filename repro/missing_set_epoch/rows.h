// The configurations a missing_set_epoch run covers (shared by repro and fix
// so that their tables line up).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::missing_set_epoch {

struct PairOptions {
  int epochs = 5;
  bool sweep = false;
  bool train = true;  // the training curves (repro only)
  // --device (core/device/device_flag.h): where training's gradient
  // all-reduce runs.
  std::string device = "auto";
};

// World sizes: {2, --world_size} (2 is where the closed form reads 75%);
// --sweep adds 4 and 8. Dataset sizes: {--n}; --sweep adds 10000.
std::vector<int> WorldSizes(const harness::CommonFlags& f, const PairOptions& o);
std::vector<int64_t> DatasetSizes(const harness::CommonFlags& f, const PairOptions& o);

}  // namespace ddp::missing_set_epoch
