#include "core/launch/children.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "core/launch/guardian.h"
#include "core/launch/supervise.h"

namespace ddp::launch {
namespace {

std::mutex g_mu;
std::set<pid_t> g_forked;
std::set<int> g_fds;

// The fields of /proc/<pid>/stat after "pid (comm)": comm may contain
// spaces and parentheses, so split after the last ')'. Empty when unreadable.
std::vector<std::string> StatFields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// The parent pid (field 4: the second after comm).
pid_t ParentOf(const std::string& pid) {
  const auto fields = StatFields(pid);
  return fields.size() > 1 ? static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10)) : -1;
}

}  // namespace

void RegisterForked(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_forked.insert(pid);
}

void ForgetForked(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_forked.erase(pid);
}

// A service is skipped by AdoptedChildren exactly as a rank is.
void RegisterService(pid_t pid) { RegisterForked(pid); }
void ForgetService(pid_t pid) { ForgetForked(pid); }

void RegisterOwnedFd(int fd) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_fds.insert(fd);
}

void CloseOwnedFd(int fd) {
  if (fd < 0) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_fds.erase(fd);
  }
  ::close(fd);
}

std::vector<int> OwnedFds() {
  std::lock_guard<std::mutex> lock(g_mu);
  return std::vector<int>(g_fds.begin(), g_fds.end());
}

bool IsExiting(pid_t pid) {
  // Field 3 is the state, field 9 the flags; PF_EXITING (0x4, linux/sched.h)
  // is set in do_exit() before the process's files are closed.
  constexpr unsigned long kPfExiting = 0x4;
  const auto fields = StatFields(std::to_string(pid));
  if (fields.size() < 7) return false;
  const char state = fields[0].empty() ? '?' : fields[0][0];
  if (state == 'Z' || state == 'X' || state == 'x') return true;
  return (std::strtoul(fields[6].c_str(), nullptr, 10) & kPfExiting) != 0;
}

std::vector<pid_t> AdoptedChildren() {
  const pid_t me = ::getpid();
  const pid_t guardian = GuardianPid();
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  std::lock_guard<std::mutex> lock(g_mu);
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    if (pid == guardian || g_forked.count(static_cast<pid_t>(pid)) != 0) continue;
    if (ParentOf(e->d_name) == me) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

}  // namespace ddp::launch
