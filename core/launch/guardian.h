// What survives the launcher's own death: nothing it registered here.
//
// A launcher killed by SIGKILL (or crashing) cannot clean up. Its ranks die
// with it (PR_SET_PDEATHSIG, see supervise.h), but what they started would
// be re-parented to init and live on, and its rendezvous folder would stay.
// So on first use a small guardian process is forked: it holds one end of a
// socket pair whose other end only the launcher holds. The launcher tells it
// which process groups (one per rank) and paths it owns, and forgets them
// once it has cleaned up itself. When the launcher's end closes — the
// launcher exited or died, however — the guardian SIGKILLs every group still
// registered and every process whose environment carries this launcher's
// token (DDP_LAUNCHER_TOKEN: processes that left the rank's group with
// setsid), removes every path still registered, and exits.
//
// All calls are best effort: without a guardian (fork failed) the launcher
// still cleans up after itself whenever it lives to do so.
#pragma once

#include <sys/types.h>

#include <string>

namespace ddp::launch {

inline constexpr char kEnvLauncherToken[] = "DDP_LAUNCHER_TOKEN";

// Starts the guardian if it is not running yet (idempotent).
void StartGuardian();
void GuardGroup(pid_t pgid);
void ReleaseGroup(pid_t pgid);
void GuardPath(const std::string& path);
void ReleasePath(const std::string& path);

// This launcher's token (exported to every rank as DDP_LAUNCHER_TOKEN).
const std::string& LauncherToken();
// The guardian's pid (-1 before first use or if it could not start).
pid_t GuardianPid();

// In a child forked without exec (a rank): closes the parent's guardian
// socket and forgets it, so that a child that launches ranks itself gets a
// guardian and a token of its own. Locks nothing.
void ForgetGuardianInChild();

}  // namespace ddp::launch
