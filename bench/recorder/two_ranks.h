// The Comm layer against a bare Gloo call on two real ranks (spawned
// processes, TCP on loopback): what the overhead is worth next to a real
// collective. Google Benchmark cannot interleave across processes, so this
// part times by hand: every repetition runs the three variants (bare Gloo,
// Comm with the recorder, Comm without) in a rotating order, each after an
// untimed barrier, `calls` one-double allreduces each; rank 0's per-call
// times come back and the medians are compared.
#pragma once

#include <string>
#include <vector>

namespace ddp::bench {

struct TwoRankTimes {
  std::vector<double> bare_us, on_us, off_us;  // per call, one value per repetition
  std::string error;                           // non-empty: the run failed
};

TwoRankTimes MeasureTwoRanks(int repetitions, int calls);

double Median(std::vector<double> v);

}  // namespace ddp::bench
