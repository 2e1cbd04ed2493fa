// Checked mode (DDP_PITFALLS_CHECK=1) on the three collective mismatches
// that core/comm/README.md compares with PyTorch's
// TORCH_DISTRIBUTED_DEBUG=DETAIL (detail.py here runs the same three on
// PyTorch 1.13):
//   unequal_allgather     every rank all_gathers its share of N = 1003
//                         samples split without padding (502/501 at W = 2)
//   allreduce_vs_barrier  rank 0 calls Allreduce, the others Barrier
//   sum_vs_max            rank 0 allreduces with sum, the others with max
//   extra_step_alive      every rank runs 3 Allreduces, rank 0 a 4th; the
//                         others stay alive (communicator open, sleeping)
//                         past the deadline
// Gloo (or NCCL), one process per rank, checked mode on, collective
// deadline --timeout seconds. Measured per rank: the error (CheckError,
// DeadlineError, PeerError, or none), its first line, and the seconds from
// entering the mismatched call to the error.
#pragma once

#include <vector>

#include "core/harness/pair_main.h"

namespace ddp::checked_vs_detail {

enum class Scenario { kUnequalAllgather, kAllreduceVsBarrier, kSumVsMax, kExtraStepAlive };
const char* Name(Scenario s);

inline constexpr int64_t kSamples = 1003;

// One record per scenario and world size (bug "checked_mode", kind repro,
// variant = scenario), `reproduced` when checked mode behaves as documented:
//   unequal_allgather, allreduce_vs_barrier, sum_vs_max: CheckError on every rank, each
//     before the deadline (the fingerprint exchange catches it; the engine
//     never runs the mismatched call)
//   extra_step_alive: a DeadlineError on rank 0 no earlier than the deadline
//     (nothing to compare against: the others never call again), whose
//     report names the ranks that never entered; no error on the others
std::vector<results::Record> RunScenarios(const harness::CommonFlags& f,
                                          const std::vector<int>& worlds);

}  // namespace ddp::checked_vs_detail
