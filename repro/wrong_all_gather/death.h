// Why a rank of raw_unequal ended without reporting its first gather, and
// whether that is the bug's symptom.
//
// raw_unequal passes each rank's own-length tensor straight to the engine.
// What the engine does is the symptom: Gloo aborts the rank that receives a
// message longer than the buffer it posted (gloo::EnforceNotMet thrown on its
// loop thread ends in std::terminate, SIGABRT), or a gather never returns
// and the supervisor ends it at the deadline; a rank still connecting when
// that abort happens fails its rendezvous and says a peer caused it. A rank
// killed from outside
// (SIGKILL or SIGTERM from a user or the OOM killer), one stopped, or one
// crashing in our own code says nothing about the engine: counting it as
// "reproduced" would let any unrelated death pass for the bug.
#pragma once

#include <string>

#include "core/launch/supervise.h"

namespace ddp::wrong_all_gather {

enum class Death {
  kEngine,      // Gloo's own abort on the oversized message
  kSupervisor,  // ended by the supervisor (deadline: a hang; fail-fast after a peer)
  kPeer,        // failed on its own, blaming a peer (e.g. its rendezvous lost a peer
                // that Gloo had already aborted): a consequence, not a cause
  kForeign,     // anything else: not the engine's doing
};

Death ClassifyDeath(const launch::RankOutcome& o);

}  // namespace ddp::wrong_all_gather
