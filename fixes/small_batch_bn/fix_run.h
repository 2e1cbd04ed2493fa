// The small-batch BatchNorm fixes as records (see fix_run.cc).
#pragma once

#include <vector>

#include "core/device/make_device.h"
#include "core/harness/pair_main.h"

namespace ddp::small_batch_bn {

struct FixOptions {
  bool sweep = false;         // W {1,2,3,4,5,8} x per-rank batch {1,2,3,8}, plus uneven batches
  std::vector<int> batches;   // explicit per-rank batches (overrides --world_size / --batch_size)
  int steps = 50;             // teacher-forced steps per check
  int precise_batches = 4;    // PreciseBN: batches per rank in each check
  double lr = 0.05;
  double noise = 0.3;
  // Where the ranks' norm layers compute (--norm_device), and with them
  // DDP's gradient and PreciseBN all-reduces: auto = the GPU
  // under --backend nccl, the host (core/nn's Eigen) otherwise.
  device::Placement placement = device::Placement::kAuto;
};

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const FixOptions& o);

}  // namespace ddp::small_batch_bn
