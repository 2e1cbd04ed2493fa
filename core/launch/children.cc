#include "core/launch/children.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>

#include "core/launch/guardian.h"
#include "core/launch/supervise.h"

namespace ddp::launch {
namespace {

std::mutex g_mu;
std::set<pid_t> g_forked;
std::set<int> g_fds;

// The parent pid from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm
// may contain spaces and parentheses, so parse after the last ')').
pid_t ParentOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return -1;
  return static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
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
