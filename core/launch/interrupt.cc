#include "core/launch/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace ddp::launch {
namespace {

std::atomic<int> g_signal{0};
int g_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const int saved = errno;
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &b, 1);
  }
  errno = saved;
}

}  // namespace

void InstallInterruptHandlers() {
  if (g_pipe[0] >= 0) return;
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;  // then no forwarding
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESETHAND;  // the second signal of a kind: default action
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

bool InterruptHandlersInstalled() { return g_pipe[0] >= 0; }

int InterruptSignal() { return g_signal.load(); }

int InterruptFd() { return g_pipe[0]; }

}  // namespace ddp::launch
