// Every collective of the Comm API against a serial reference, run inside one
// rank. The same suite checks every backend: inputs are small integers (exact
// in float32, so sums do not depend on the engine's summation order), the
// reference is recomputed from the formula for every rank's input.
#pragma once

#include <string>
#include <vector>

#include "core/comm/comm.h"

namespace ddp::comm::testing {

// Runs all ops for all dtypes on `comm`; returns the failures (empty: all
// equal to the reference), each a readable line.
std::vector<std::string> RunOpSuite(Comm& comm);

}  // namespace ddp::comm::testing
