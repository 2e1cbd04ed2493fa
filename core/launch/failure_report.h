// A rank's own account of why it failed, for its launcher.
//
// When ranks fail together, the order in which a launcher sees them exit
// does not tell cause from effect: the rank that died closes its sockets,
// and a peer blocked in a collective can exit (with a peer error) before the
// launcher has even reaped the first. So, like torchrun's
// TORCHELASTIC_ERROR_FILE, the launcher gives every rank a file path in
// DDP_FAILURE_FILE; a rank about to fail writes one line there saying
// whether its failure was caused by a peer (a peer error, or a deadline a
// peer never met) or is its own. The launcher blames the first rank whose
// failure was its own (supervise.h). Ranks that write nothing (any program
// not built on this suite) are judged by when they were seen to end.
#pragma once

#include <optional>
#include <string>

namespace ddp::launch {

inline constexpr char kEnvFailureFile[] = "DDP_FAILURE_FILE";

// Writes the report to $DDP_FAILURE_FILE; does nothing when it is unset.
// The first report of a process wins (the root of its own failure).
void ReportFailure(bool caused_by_peer, const std::string& what);

struct FailureReport {
  bool caused_by_peer = false;
  std::string what;  // the first line of the message
};
std::optional<FailureReport> ReadFailureReport(const std::string& path);

}  // namespace ddp::launch
