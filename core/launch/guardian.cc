#include "core/launch/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

namespace ddp::launch {
namespace {

std::mutex g_mu;
int g_fd = -1;
pid_t g_pid = -1;
bool g_tried = false;
std::string g_token;  // "" until first asked for

std::string NewToken() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::to_string(::getpid()) + "-" + std::to_string(ts.tv_sec) + "." +
         std::to_string(ts.tv_nsec);
}

// Processes (other than this one) whose environment holds `entry`.
void KillByEnvironment(const std::string& entry) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 1 || pid == ::getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0')) {
      if (var == entry) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        break;
      }
    }
  }
  ::closedir(proc);
}

[[noreturn]] void GuardianMain(int fd, const std::string& token) {
  ::setsid();  // no terminal signals; not in the launcher's group either
  ::prctl(PR_SET_NAME, "ddp-guardian");
  const int null = ::open("/dev/null", O_RDWR);
  for (int target : {0, 1, 2}) ::dup2(null, target);
  // Keep only the socket: an inherited pipe end would keep some reader of
  // the launcher's output waiting for us.
  ::dup2(fd, 3);
  ::close_range(4, ~0U, 0);
  fd = 3;
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  std::set<pid_t> groups;
  std::set<std::string> paths;
  std::string pending;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the launcher is gone
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      if (line.size() < 3) continue;
      const std::string arg = line.substr(3);
      if (line.rfind("+g ", 0) == 0 && std::stoi(arg) > 1) groups.insert(std::stoi(arg));
      if (line.rfind("-g ", 0) == 0) groups.erase(std::stoi(arg));
      if (line.rfind("+p ", 0) == 0) paths.insert(arg);
      if (line.rfind("-p ", 0) == 0) paths.erase(arg);
    }
  }
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  if (!groups.empty()) KillByEnvironment(std::string(kEnvLauncherToken) + "=" + token);
  for (const auto& p : paths) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  ::_exit(0);
}

// Starts the guardian on first use; returns the socket or -1.
int Connect() {
  if (g_tried) return g_fd;
  g_tried = true;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  const std::string token = LauncherToken();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    ::close(sv[0]);
    GuardianMain(sv[1], token);
  }
  ::close(sv[1]);
  g_fd = sv[0];
  g_pid = pid;
  return g_fd;
}

void Send(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mu);
  const int fd = Connect();
  if (fd < 0) return;
  const std::string msg = line + "\n";
  size_t done = 0;
  while (done < msg.size()) {
    // MSG_NOSIGNAL: a guardian someone killed must not kill us with SIGPIPE.
    const ssize_t n = ::send(fd, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void StartGuardian() {
  std::lock_guard<std::mutex> lock(g_mu);
  Connect();
}

void GuardGroup(pid_t pgid) { Send("+g " + std::to_string(pgid)); }
void ReleaseGroup(pid_t pgid) { Send("-g " + std::to_string(pgid)); }
void GuardPath(const std::string& path) { Send("+p " + path); }
void ReleasePath(const std::string& path) { Send("-p " + path); }

const std::string& LauncherToken() {
  if (g_token.empty()) g_token = NewToken();
  return g_token;
}

void ForgetGuardianInChild() {
  if (g_fd >= 0) ::close(g_fd);
  g_fd = -1;
  g_pid = -1;
  g_tried = false;
  g_token.clear();
}

pid_t GuardianPid() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_pid;
}

}  // namespace ddp::launch
