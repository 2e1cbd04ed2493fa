// The small-batch BatchNorm fixes as records (see fix_run.cc).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/small_batch_bn/variants.h"

namespace ddp::small_batch_bn {

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const PairOptions& o);

}  // namespace ddp::small_batch_bn
