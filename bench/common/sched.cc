#include "bench/common/sched.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ddp::bench {

const std::vector<std::string>& SchedPolicies() {
  static const std::vector<std::string> policies = {"batch", "normal"};
  return policies;
}

void UseSchedPolicy(const std::string& policy) {
  int which = 0;
  if (policy == "batch") {
    which = SCHED_BATCH;
  } else if (policy == "normal") {
    which = SCHED_OTHER;
  } else {
    throw std::runtime_error("unknown scheduling policy '" + policy + "'");
  }
  sched_param param{};
  param.sched_priority = 0;
  if (::sched_setscheduler(0, which, &param) != 0) {
    throw std::runtime_error("sched_setscheduler(" + policy + "): " + std::strerror(errno));
  }
}

int PinToCpu(int rank) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.empty()) throw std::runtime_error("sched_getaffinity: no CPU allowed");
  const int cpu = cpus[static_cast<std::size_t>(rank) % cpus.size()];
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (::sched_setaffinity(0, sizeof(one), &one) != 0) {
    throw std::runtime_error("sched_setaffinity(CPU " + std::to_string(cpu) +
                             "): " + std::strerror(errno));
  }
  return cpu;
}

}  // namespace ddp::bench
