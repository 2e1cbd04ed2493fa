// Looking at processes from a test: who are a process's children, and is a
// process gone (exited; a zombie waiting for its reaper counts as gone).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ddp::launch::testing {

// The children of `parent` whose /proc comm is `comm` (all when empty).
std::vector<pid_t> ChildrenOf(pid_t parent, const std::string& comm = "");

// The children of `parent` that are ranks: not its guardian.
std::vector<pid_t> RankChildrenOf(pid_t parent);

bool Gone(pid_t pid);

// Waits until every pid is gone; false if one is still running at `limit`.
bool WaitGone(const std::vector<pid_t>& pids, std::chrono::milliseconds limit);

// Waits until `parent` has exactly `n` rank children; returns them (others
// on timeout).
std::vector<pid_t> WaitForRanks(pid_t parent, size_t n, std::chrono::milliseconds limit);

// Files whose name starts with `prefix` in `dir`.
std::vector<std::string> FilesStartingWith(const std::string& dir, const std::string& prefix);

// Waits until `path` exists; false on timeout.
bool WaitForFile(const std::string& path, std::chrono::milliseconds limit);

// The pids in the ready-<rank> files that tools/ddprun:rank_program
// --ready-dir writes (each rank's pid, then its children's), once all n
// exist; empty when one is still missing after a minute.
std::vector<pid_t> ReadyPids(const std::string& dir, int n);

}  // namespace ddp::launch::testing
