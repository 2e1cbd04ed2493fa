// Checks a pair binary makes before its first world, so that what cannot
// work is a usage error (exit 2, one message) and never a record.
#pragma once

#include <string>

namespace ddp::harness {

// "" when `backend` can run here; else why not, naming the flag. For nccl:
// built with NCCL, a GPU visible, libnccl loadable (asked in a child
// process: CUDA initialised here would not survive the ranks' fork()).
std::string BackendProblem(const std::string& backend);

}  // namespace ddp::harness
