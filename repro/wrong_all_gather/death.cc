#include "repro/wrong_all_gather/death.h"

#include <csignal>

namespace ddp::wrong_all_gather {

Death ClassifyDeath(const launch::RankOutcome& o) {
  // A stopped rank was stopped by someone; the supervisor only ended it.
  if (o.killed && !o.stopped) return Death::kSupervisor;
  // Its own report (failure_report.h) blames a peer; that peer's death is
  // judged on its own.
  if (o.exited && o.exit_code != 0 && o.caused_by_peer) return Death::kPeer;
  // Only Gloo's abort: an abort of ours (an assert, a std::terminate from our
  // code) would not name the engine's exception.
  if (!o.killed && o.signal == SIGABRT &&
      o.stderr_text.find("gloo::EnforceNotMet") != std::string::npos) {
    return Death::kEngine;
  }
  return Death::kForeign;
}

}  // namespace ddp::wrong_all_gather
