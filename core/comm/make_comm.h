// MakeComm: the one way to build a communicator.
//
//   auto comm = ddp::comm::MakeComm(ddp::comm::OptionsFromEnvironment());
//   std::vector<double> v = {1.0 * comm->rank()};
//   comm->Allreduce(std::span(v));  // sum over ranks, in place
//
// Backends: "gloo" (always) and "nccl" (linked only where CUDA was found at
// build time). Throws ConfigError for bad options (unknown or unavailable
// backend, W < 1, rank >= W, unusable store), CommError when the rendezvous
// fails within the deadline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/options.h"

namespace ddp::comm {

std::unique_ptr<Comm> MakeComm(const CommOptions& options);

// Backends linked into this binary ("gloo", and "nccl" where CUDA exists).
std::vector<std::string> AvailableBackends();

}  // namespace ddp::comm
