// StartChild: one rank process, set up so that it cannot outlive the
// launcher, cannot keep the launcher's descriptors, and reports its output.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "core/cli/config_error.h"
#include "core/launch/children.h"
#include "core/launch/guardian.h"
#include "core/launch/limits.h"
#include "core/launch/supervise.h"

namespace ddp::launch {
namespace {

// A pipe for rank `rank`'s output, or a ConfigError naming the limit.
void MakePipe(int fds[2], int rank) {
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    throw ConfigError("cannot start rank " + std::to_string(rank) + ": " +
                      ResourceFailure("pipe2", err));
  }
}

}  // namespace

ChildProcess StartChild(int rank, const std::function<int()>& body) {
  int out[2], err[2];
  MakePipe(out, rank);
  try {
    MakePipe(err, rank);
  } catch (...) {
    ::close(out[0]);
    ::close(out[1]);
    throw;
  }
  std::fflush(nullptr);  // no buffered parent output duplicated in the child
  // Orphans of our ranks come to us rather than to init (which, in a
  // container, may never reap them), so Supervise can kill and reap them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Taken before fork: the child must not lock anything.
  const std::string token = LauncherToken();
  StartGuardian();  // now, before the fork below
  const std::vector<int> owned = OwnedFds();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    throw ConfigError("cannot start rank " + std::to_string(rank) + ": " + ResourceFailure("fork", e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // the parent died before prctl
    // Default dispositions and an empty mask: the parent may block or catch
    // signals, and an exec'd rank must see SIGTERM as a terminate request.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Earlier ranks' pipes and the guardian's socket are the launcher's: a
    // rank holding them would keep a dead peer's output open.
    for (int fd : owned) ::close(fd);
    ForgetGuardianInChild();
    ::close(out[0]);
    ::close(err[0]);
    // Via descriptors above 2, in case a pipe end itself landed on 1 or 2.
    const int o = ::fcntl(out[1], F_DUPFD, 3), e = ::fcntl(err[1], F_DUPFD, 3);
    for (int fd : {out[1], err[1]}) {
      if (fd > 2) ::close(fd);
    }
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::close(o);
    ::close(e);
    ::setenv(kEnvLauncherToken, token.c_str(), 1);
    int code = 1;
    try {
      code = body();
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
      code = kExitUsage;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: uncaught exception: %s\n", rank, e.what());
      code = 1;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    // _exit: the parent's atexit handlers and static destructors (gtest,
    // gloo devices shared before fork) must not run in the child.
    ::_exit(code);
  }
  ::setpgid(pid, pid);  // also here, so kill(-pid) works even before the child runs
  RegisterForked(pid);
  GuardGroup(pid);
  ::close(out[1]);
  ::close(err[1]);
  RegisterOwnedFd(out[0]);
  RegisterOwnedFd(err[0]);
  return ChildProcess{rank, pid, out[0], err[0], ""};
}

}  // namespace ddp::launch
