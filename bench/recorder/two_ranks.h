// The Comm layer against a bare Gloo call on two real ranks (spawned
// processes, TCP on loopback): what the overhead is worth next to a real
// collective. Google Benchmark cannot interleave across processes, so this
// part times by hand: every repetition runs the three variants (bare Gloo,
// Comm with the recorder, Comm without) in a rotating order, each after an
// untimed barrier, `calls` one-double allreduces each; rank 0's per-call
// times come back and the medians are compared: wall time (what a caller
// waits, peer and network included; inflated by preemption on a loaded
// machine) and the calling thread's CPU time (the software on the call path;
// Gloo's I/O runs on its own device thread and is not in it).
#pragma once

#include <string>
#include <vector>

namespace ddp::bench {

struct TwoRankTimes {
  // Per call, one value per repetition: wall time and the calling thread's CPU time.
  std::vector<double> bare_us, on_us, off_us;
  std::vector<double> bare_cpu_us, on_cpu_us, off_cpu_us;
  std::string error;  // non-empty: the run failed
};

TwoRankTimes MeasureTwoRanks(int repetitions, int calls);

}  // namespace ddp::bench
