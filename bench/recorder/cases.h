// The benchmarks of bench/recorder, registered with Google Benchmark (one
// process): the flight recorder's hot path alone, and one collective through
// the whole Comm layer against the same collective as a bare Gloo call, on a
// one-rank Gloo world (no peer, no network: the software is all there is).
#pragma once

#include <memory>
#include <string>

namespace ddp::comm {
class Comm;
}

namespace ddp::bench {

class BareGloo;

// Names of the benchmarks the summary divides (see main.cc).
inline constexpr char kRecorderAllreduce[] = "recorder/allreduce";
inline constexpr char kRecorderAllgatherv[] = "recorder/allgatherv/W:64";
inline constexpr char kRecorderNoClock[] = "recorder/allreduce/no_clock";
inline constexpr char kTwoClockReads[] = "clock/steady_now_x2";
inline constexpr char kBareGloo[] = "w1/gloo_bare/allreduce";
inline constexpr char kCommOn[] = "w1/comm/allreduce/recorder:on";
inline constexpr char kCommOff[] = "w1/comm/allreduce/recorder:off";

// The one-rank worlds the Comm benchmarks call into: keep them until the
// benchmarks have run.
struct OneRankWorlds {
  std::shared_ptr<BareGloo> bare;
  std::shared_ptr<comm::Comm> recorder_on, recorder_off;
};

// Registers every benchmark; `rdzv` is a fresh folder for the one-rank
// worlds' rendezvous.
OneRankWorlds RegisterCases(const std::string& rdzv);

}  // namespace ddp::bench
