// SIGINT, SIGTERM and SIGHUP as a request to stop, for launchers.
//
// Once installed, the first such signal is recorded (InterruptSignal()) and
// makes InterruptFd() readable, so a supervisor polling its ranks' output
// wakes at once, stops every rank and reports; the launcher then exits
// 128 + signal. A second signal of the same kind has its default effect:
// a user who presses Ctrl-C twice is never ignored.
#pragma once

namespace ddp::launch {

// Idempotent; async-signal-safe handlers, self-pipe created once.
void InstallInterruptHandlers();
bool InterruptHandlersInstalled();
// The first signal received since installation, 0 if none.
int InterruptSignal();
// Readable once a signal arrived; -1 when not installed. Never drained, so
// every poll after the signal sees it.
int InterruptFd();

}  // namespace ddp::launch
