// The copy counts as records carry them (results::Json):
//   {"h2d": {"calls", "bytes"}, "d2h": {"calls", "bytes"},
//    "activation": {"h2d": {...}, "d2h": {...}}, "parameter": {...}, "statistic": {...}, "prediction": {...}}
#pragma once

#include "core/device/device.h"
#include "core/results/json.h"

namespace ddp::device {

results::Json ToJson(const CopyTally& t);
results::Json ToJson(const CopyCount& c);

}  // namespace ddp::device
