#include "core/launch/testing/processes.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ddp::launch::testing {
namespace {

using Clock = std::chrono::steady_clock;

// "pid (comm) S ppid pgrp session ..." -> state, ppid, comm, session.
bool Stat(pid_t pid, char* state, pid_t* ppid, std::string* comm, pid_t* session = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return false;
  const auto open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 >= s.size()) return false;
  *comm = s.substr(open + 1, close - open - 1);
  *state = s[close + 2];
  char* end = nullptr;
  *ppid = static_cast<pid_t>(std::strtol(s.c_str() + close + 4, &end, 10));
  const long pgrp = std::strtol(end, &end, 10);
  (void)pgrp;
  if (session != nullptr) *session = static_cast<pid_t>(std::strtol(end, nullptr, 10));
  return true;
}

}  // namespace

std::vector<pid_t> ChildrenOf(pid_t parent, const std::string& comm) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    char state = 0;
    pid_t ppid = 0;
    std::string c;
    if (!Stat(static_cast<pid_t>(pid), &state, &ppid, &c) || ppid != parent || state == 'Z') continue;
    if (comm.empty() || c == comm) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

std::vector<pid_t> RankChildrenOf(pid_t parent) {
  char state = 0;
  pid_t ppid = 0, session = 0, rank_session = 0;
  std::string comm;
  if (!Stat(parent, &state, &ppid, &comm, &session)) return {};
  std::vector<pid_t> out;
  for (pid_t p : ChildrenOf(parent)) {
    // The guardian renames itself and starts a session of its own; ranks
    // stay in the launcher's session.
    if (Stat(p, &state, &ppid, &comm, &rank_session) && comm != "ddp-guardian" &&
        rank_session == session) {
      out.push_back(p);
    }
  }
  return out;
}

bool Gone(pid_t pid) {
  // A zombie re-parented to this test process: reap it here.
  ::waitpid(pid, nullptr, WNOHANG);
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state = 0;
  pid_t ppid = 0;
  std::string comm;
  return !Stat(pid, &state, &ppid, &comm) || state == 'Z' || state == 'X';
}

bool WaitGone(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (true) {
    bool all = true;
    for (pid_t p : pids) all = all && Gone(p);
    if (all) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<pid_t> WaitForRanks(pid_t parent, size_t n, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (true) {
    // Exactly n: a guardian not yet scheduled since its fork still looks
    // like a rank, and would make n + 1.
    const auto ranks = RankChildrenOf(parent);
    if (ranks.size() == n || Clock::now() >= until) return ranks;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::string> FilesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  ::closedir(d);
  return out;
}

bool WaitForFile(const std::string& path, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  struct stat st {};
  while (::stat(path.c_str(), &st) != 0) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<pid_t> ReadyPids(const std::string& dir, int n) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const std::string path = dir + "/ready-" + std::to_string(r);
    if (!WaitForFile(path, std::chrono::seconds(60))) return {};
    std::ifstream in(path);
    for (pid_t p; in >> p;) pids.push_back(p);
  }
  return pids;
}

}  // namespace ddp::launch::testing
