// The scheduling class of a benchmark's rank processes.
//
// Why it matters (measured with perf in bench/peers/README.md): Gloo's TCP
// transport handles incoming messages on its own loop thread, which only
// try-locks a connection's mutex and, when the rank's main thread holds it
// (while posting a send or receive), returns to a level-triggered epoll_wait
// that fires again at once: it spins. Under the default policy a thread
// woken by a message preempts the one it lands next to, so on a loaded or
// oversubscribed machine the lock holder is often preempted by the spinning
// thread, and a 1 KiB gather that takes about 0.2 ms takes 2 to 8 ms.
// SCHED_BATCH (the Linux class for CPU-bound batch work) keeps the CFS share
// but never preempts on wakeup, which removes those stalls.
#pragma once

#include <string>
#include <vector>

namespace ddp::bench {

// "batch" (SCHED_BATCH) or "normal" (SCHED_OTHER, the default of a process).
const std::vector<std::string>& SchedPolicies();

// Puts the calling thread, and the threads it creates from now on (Gloo's
// loop thread among them), in `policy`. Call it in each rank process before
// the communicator exists. Throws std::runtime_error if the kernel refuses.
void UseSchedPolicy(const std::string& policy);

// Pins the calling thread, and the threads it creates from now on, to one
// CPU: the (rank mod n)-th of the n CPUs the process may run on. Why: with
// W ranks of two busy threads each (the caller and Gloo's loop thread) free
// to move, which threads share a core changes from one case to the next,
// and with it a 64 KiB gather's time by up to 2x at W = 2 on the 2-core VM
// (bench/padding/README.md); one core per rank takes that choice away.
// Returns the CPU. Throws std::runtime_error if the kernel refuses.
int PinToCpu(int rank);

}  // namespace ddp::bench
