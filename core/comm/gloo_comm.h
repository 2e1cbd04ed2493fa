// The Gloo backend: CPU buffers, TCP transport, one Gloo context per
// communicator, rendezvous through the store, every call bounded by the
// context timeout (Gloo's own deadline mechanism).
#pragma once

#include <memory>

#include "core/comm/comm.h"
#include "core/comm/options.h"

namespace ddp::comm {

// Connects all ranks (bounded by the timeout). `store` must be the
// communicator's namespaced store. Throws CommError when the rendezvous fails
// (a peer never arrives), ConfigError for bad options.
std::unique_ptr<Comm> MakeGlooComm(const CommOptions& options, CommSetup setup);

}  // namespace ddp::comm
