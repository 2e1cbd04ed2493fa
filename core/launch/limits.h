// Resource limits a launch needs, checked before any rank starts.
//
// W ranks need open files: the launcher two pipes per rank, each Gloo rank
// one socket per peer plus its own. A soft limit below that is raised
// towards the hard limit (as most servers do at start-up); a hard limit
// below it is a ConfigError naming the limit, instead of a rank that aborts
// halfway through a rendezvous.
#pragma once

#include <string>

namespace ddp::launch {

// Open files a launch of `world_size` ranks on this host needs, with margin.
long FilesNeeded(int world_size);

// Raises RLIMIT_NOFILE's soft limit to `needed` if it is lower; throws
// ConfigError naming the limit when the hard limit is lower. `what` says
// who needs them, e.g. "8 ranks".
void EnsureFileLimit(long needed, const std::string& what);

// "the open-file limit (RLIMIT_NOFILE, ulimit -n) is 16 (hard 16)".
std::string DescribeFileLimit();

// A message for a failed pipe/socket/fork: errno's text, plus the limit
// that was hit when it is one (EMFILE, EAGAIN from fork).
std::string ResourceFailure(const std::string& call, int err);

}  // namespace ddp::launch
