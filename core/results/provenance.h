// Where and with what a number was measured: every result record carries
// this, so a number cited in a paper can be traced to a commit and machine.
#pragma once

#include <string>

#include "core/results/json.h"

namespace ddp::results {

struct Provenance {
  std::string commit;  // git HEAD of the workspace, "+dirty" if its code is modified
  std::string date;    // UTC, ISO 8601
  std::string host;
  std::string cpu;
  std::string gpu;     // "none (reason)" or the device names
  std::string gloo;
  std::string tcp_congestion;  // what Gloo's sockets get here (env/report.h)
  std::string nccl;    // runtime version, or "n/a"
  std::string cuda;    // runtime and driver versions (and the NVIDIA release), or "n/a"
};

// Collects it once per process. The commit comes from $DDP_PITFALLS_COMMIT if
// set, else `git` in $BUILD_WORKSPACE_DIRECTORY (set by `bazel run`) or the
// current directory; "unknown" when neither works.
Provenance CollectProvenance();

// `git rev-parse HEAD` of the work tree at `dir`, with "+dirty" when a
// tracked file outside results/ differs from it; "unknown" outside a git
// tree. results/ is left out because a regeneration writes there while it
// runs: the records it has already rewritten say nothing about the code
// that made the next one.
std::string GitCommitOf(const std::string& dir);

Json ToJson(const Provenance& p);

}  // namespace ddp::results
