#include "core/launch/limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "core/cli/config_error.h"

namespace ddp::launch {
namespace {

std::string LimitText(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

}  // namespace

long FilesNeeded(int world_size) { return 3L * world_size + 64; }

std::string DescribeFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return "the open-file limit is unknown";
  return "the open-file limit (RLIMIT_NOFILE, ulimit -n) is " + LimitText(rl.rlim_cur) +
         " (hard " + LimitText(rl.rlim_max) + ")";
}

void EnsureFileLimit(long needed, const std::string& what) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(needed);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want) return;
  if (rl.rlim_cur == RLIM_INFINITY) return;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
    throw ConfigError(what + " need about " + std::to_string(needed) + " open files, but " +
                      DescribeFileLimit() + ": raise it (ulimit -n " + std::to_string(needed) +
                      ") or run fewer ranks");
  }
  rl.rlim_cur = want;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    throw ConfigError(what + " need about " + std::to_string(needed) + " open files, but " +
                      DescribeFileLimit() + " and raising it failed: " + std::strerror(errno));
  }
}

std::string ResourceFailure(const std::string& call, int err) {
  std::string s = call + ": " + std::strerror(err);
  if (err == EMFILE || err == ENFILE) {
    s += " (" + DescribeFileLimit() + ")";
  } else if (err == EAGAIN && call.rfind("fork", 0) == 0) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NPROC, &rl) == 0) {
      s += " (the process limit (RLIMIT_NPROC, ulimit -u) is " + LimitText(rl.rlim_cur) + ")";
    }
  }
  return s;
}

}  // namespace ddp::launch
