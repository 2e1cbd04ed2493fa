// The copy counts as records carry them (results::Json):
//   {"h2d": {"calls", "bytes"}, "d2h": {"calls", "bytes"},
//    "activation": {"h2d": {...}, "d2h": {...}}, "parameter": {...}, "statistic": {...}, "prediction": {...}}
#pragma once

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "core/results/json.h"

namespace ddp::device {

results::Json ToJson(const CopyTally& t);
results::Json ToJson(const CopyCount& c);
// What a Comm staged through device memory between two readings of
// Comm::staged_copies() (host buffers on NCCL; always zero on Gloo), as
// records carry it: {"h2d": {"calls", "bytes"}, "d2h": {...}}.
results::Json StagingJson(const comm::Comm::StagedCopies& before, const comm::Comm::StagedCopies& after);

}  // namespace ddp::device
