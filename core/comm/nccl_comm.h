// The NCCL backend (built only where CUDA exists).
#pragma once

#include <memory>

#include "core/comm/comm.h"
#include "core/comm/options.h"

namespace ddp::comm {

std::unique_ptr<Comm> MakeNcclComm(const CommOptions& options, CommSetup setup);

}  // namespace ddp::comm
