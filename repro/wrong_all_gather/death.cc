#include "repro/wrong_all_gather/death.h"

#include <csignal>

namespace ddp::wrong_all_gather {

Death ClassifyDeath(const launch::RankOutcome& o) {
  // A stopped rank was stopped by someone; the supervisor only ended it.
  if (o.killed && !o.stopped) return Death::kSupervisor;
  // Only Gloo's abort: an abort of ours (an assert, a std::terminate from our
  // code) would not name the engine's exception.
  if (!o.killed && o.signal == SIGABRT &&
      o.stderr_text.find("gloo::EnforceNotMet") != std::string::npos) {
    return Death::kEngine;
  }
  return Death::kForeign;
}

}  // namespace ddp::wrong_all_gather
