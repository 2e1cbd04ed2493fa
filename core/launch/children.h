// Bookkeeping shared by StartChild and Supervise (internal to
// core/launch:supervise): which children this process forked itself, which
// descriptors are the supervisor's (a forked rank must not keep them), and
// which children were re-parented to it.
#pragma once

#include <sys/types.h>

#include <vector>

namespace ddp::launch {

void RegisterForked(pid_t pid);
void ForgetForked(pid_t pid);

void RegisterOwnedFd(int fd);
// Closes `fd` and forgets it.
void CloseOwnedFd(int fd);
// A copy, taken before fork: the child closes them without locking.
std::vector<int> OwnedFds();

// Whether `pid` (a child not yet reaped) is exiting or has exited: a
// zombie, or inside the kernel's exit path (PF_EXITING). False when its
// /proc entry cannot be read. Supervise asks it when a rank's output closes,
// to tell a rank that ended from one that closed or redirected its output
// and lives on.
bool IsExiting(pid_t pid);

// Children of this process it did not fork through StartChild (nor the
// guardian): processes re-parented to it, this being a child subreaper.
std::vector<pid_t> AdoptedChildren();

}  // namespace ddp::launch
