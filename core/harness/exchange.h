// Moving one JSON value between the ranks of a world over its own
// communicator. The Comm API has no byte type, so the text travels as
// integer words.
#pragma once

#include <vector>

#include "core/comm/comm.h"
#include "core/results/json.h"

namespace ddp::harness {

// Every rank's value, gathered: element r is rank r's `mine`. Launched mode
// uses it so that each rank judges a world from the same values a spawned
// world's caller sees (rank_values of every rank, value = rank 0's).
std::vector<results::Json> ExchangeValues(comm::Comm& comm, const results::Json& mine);

// Rank 0's `value` on every rank (the others' argument is ignored), so that
// under a launcher (ddprun, torchrun: RunWorld returns each rank its own
// value) every rank builds the same records and exits with the same status.
results::Json BroadcastFromRankZero(comm::Comm& comm, const results::Json& value);

}  // namespace ddp::harness
