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

}  // namespace ddp::bench
