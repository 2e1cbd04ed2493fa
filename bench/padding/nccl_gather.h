// The NCCL-only methods (c): what PyTorch does for an uneven all_gather on
// NCCL (one broadcast per rank, grouped), and the same exchange as grouped
// point-to-point send/recv. They need the raw ncclComm_t, which the Comm API
// keeps private, so this file opens its own NCCL communicator among the
// same ranks (unique id through the run's rendezvous store).
//
// Built only where CUDA exists (target_compatible_with CUDA_ONLY); no CUDA
// header leaks into this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/padding/gather.h"
#include "bench/padding/memory.h"
#include "core/launch/rank_env.h"

namespace ddp::bench {

// The GPU this rank uses: LOCAL_RANK, or LOCAL_RANK mod the device count when
// ranks share GPUs (env.share_gpu). Throws std::runtime_error without a GPU.
int SelectGpu(const launch::RankEnv& env);

// Device memory on `device`, with copies queued on one stream.
std::unique_ptr<Memory> DeviceMemory(int device);

class RawNccl;  // an ncclComm_t and its stream

// Collective: every rank calls it. The rendezvous, the communicator's init
// and its first collective are bounded by the start-up bound
// (core/comm/options.h: DDP_PITFALLS_STARTUP_TIMEOUT, default max(timeout,
// 60 s)), every later collective by `timeout_ms`; past a bound the
// communicator is aborted and comm::EngineFailure thrown (the Comm API's
// engine, core/comm/nccl_engine.h).
std::shared_ptr<RawNccl> ConnectRawNccl(const launch::RankEnv& env, int device,
                                        std::int64_t timeout_ms);

// kGroupedBroadcast or kGroupedSendRecv; `memory` must be DeviceMemory.
std::unique_ptr<Gather> MakeNcclGather(Method m, std::shared_ptr<RawNccl> nccl, Memory& memory,
                                       std::vector<std::int64_t> lengths);

}  // namespace ddp::bench
