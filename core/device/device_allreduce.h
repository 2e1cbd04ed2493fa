// An all-reduce of a host buffer that runs on a device buffer: the one place
// a pair's gradient or metric all-reduce crosses between the Eigen network
// (host memory) and the device.
//
//   device == nullptr (placement host): comm.Allreduce on the host buffer,
//     exactly as before (under NCCL the Comm stages it through device memory
//     itself, counted by Comm::staged_copies()).
//   a device: upload the host values (one counted copy of `kind`), all-reduce
//     the device buffer through the Comm (which then stages nothing), download
//     the result into the host buffer (one counted copy back).
//
// Either way it is one collective, with the same count, type and op and the
// caller's source location (the flight recorder names the pair's line, not
// this file), so a repro's sequence of collectives is unchanged. The values
// are the engine's sum either way: Gloo reduces the emulated device's buffer
// (host memory) exactly as it reduces the host one.
//
// Kinds: a parameter gradient is CopyKind::kParameter (device.h: "parameter
// gradients out"); a metric's sums are CopyKind::kStatistic. float and
// double (a Device's types); integer buffers stay on the host.
#pragma once

#include <span>

#include "core/comm/comm.h"
#include "core/device/device.h"

namespace ddp::device {

template <typename T>
void AllreduceOnDevice(comm::Comm& comm, Device<T>* device, std::span<T> host, CopyKind kind,
                       comm::ReduceOp op = comm::ReduceOp::kSum,
                       comm::Comm::Site site = comm::Comm::Site::current());

}  // namespace ddp::device
