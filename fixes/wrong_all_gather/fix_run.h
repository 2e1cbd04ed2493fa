// Running the two gather fixes over rows of configurations.
#pragma once

#include <vector>

#include "core/device/make_device.h"
#include "core/harness/pair_main.h"
#include "repro/wrong_all_gather/rows.h"

namespace ddp::wrong_all_gather {

// One record per row, sharding (padded_sampler, strided) and method; exact
// when AUC and AP equal the one-process values to 1e-12 for every seed (or
// both are undefined, with the same message). `gather_device` says where
// each rank pads, trims and reorders (--gather_device; resolved against
// flags.backend as make_device.h says): config.gather_device records it and,
// on a device, measured.device_copies each rank's copies for the row's first
// gather (gather.h).
std::vector<results::Record> RunFixOnRows(const harness::CommonFlags& flags, const std::vector<Row>& rows,
                                          device::Placement gather_device = device::Placement::kHost);

std::vector<results::Record> RunFix(const harness::CommonFlags& flags, bool sweep,
                                    device::Placement gather_device = device::Placement::kAuto);

}  // namespace ddp::wrong_all_gather
