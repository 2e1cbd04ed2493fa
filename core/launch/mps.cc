#include "core/launch/mps.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/cli/config_error.h"
#include "core/launch/guardian.h"
#include "core/launch/spawn.h"
#include "core/launch/supervise.h"

namespace ddp::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kControlName[] = "nvidia-cuda-mps-control";
constexpr milliseconds kStartWait{10000};  // the daemon's pipe to appear
constexpr milliseconds kStopWait{10000};   // `quit` to be obeyed
// What going without MPS costs, as measured (see mps.h).
constexpr char kCost[] =
    "ranks sharing a GPU are time-sliced (one H100, 2026-11-26: 90-140 ms per 4 KB allreduce at W = 4)";

struct Daemon {
  pid_t pid = -1;
  pid_t owner = -1;  // the process that started it (a forked rank must not stop it)
  std::string dir, pipe_dir, log_dir, control, report;
};

std::mutex g_mu;
bool g_decided = false;
MpsStatus g_status;
Daemon g_daemon;

bool Exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

std::string FindOnPath(const std::string& name, const EnvLookup& env) {
  const std::string path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string TailOf(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.empty() ? "no output" : last;
}

// Runs the control program with the daemon's folders in its environment:
// `args` empty and `input` given is the client mode (`quit`). Everything the
// child needs is built before fork: it only redirects and execs.
pid_t ForkControl(const Daemon& d, const std::vector<std::string>& args, const std::string& input,
                  const std::string& output) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "CUDA_MPS_PIPE_DIRECTORY" && key != "CUDA_MPS_LOG_DIRECTORY" && key != kEnvLauncherToken) {
      env_text.push_back(kv);
    }
  }
  env_text.push_back("CUDA_MPS_PIPE_DIRECTORY=" + d.pipe_dir);
  env_text.push_back("CUDA_MPS_LOG_DIRECTORY=" + d.log_dir);
  // The guardian kills every process carrying this launcher's token (the
  // daemon and the server it forks) should this process die first.
  env_text.push_back(std::string(kEnvLauncherToken) + "=" + LauncherToken());
  std::vector<char*> envp;
  for (auto& kv : env_text) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<char*> argv = {const_cast<char*>(d.control.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The client's input comes from a file, not a pipe: a control program
  // that exits before reading would make writing to a pipe raise SIGPIPE here.
  std::string input_path = "/dev/null";
  if (!input.empty()) {
    input_path = d.dir + "/control.in";
    std::ofstream(input_path, std::ios::trunc) << input;
  }
  const int in = ::open(input_path.c_str(), O_RDONLY | O_CLOEXEC);
  const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    ::execve(d.control.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  for (int fd : {in, out}) {
    if (fd >= 0) ::close(fd);
  }
  return pid;
}

// True when `pid` ended within `limit` (reaped).
bool WaitEnded(pid_t pid, milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (true) {
    const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

void ExportDaemon(const Daemon& d) {
  ::setenv("CUDA_MPS_PIPE_DIRECTORY", d.pipe_dir.c_str(), 1);
  ::setenv("CUDA_MPS_LOG_DIRECTORY", d.log_dir.c_str(), 1);
  ::setenv(kEnvMpsReport, d.report.c_str(), 1);
}

// Starts `control -f` with private folders; "" on success, else why not.
std::string StartDaemon(const std::string& control, Daemon* d) {
  StartGuardian();
  d->control = control;
  // Under /tmp, not TEST_TMPDIR: the daemon's Unix socket path must stay
  // within 108 bytes, and Bazel's test folders are longer than that.
  d->dir = MakeFreshDir("ddp-mps", "/tmp");
  GuardPath(d->dir);
  d->pipe_dir = d->dir + "/pipe";
  d->log_dir = d->dir + "/log";
  d->report = d->dir + "/attached";
  std::filesystem::create_directories(d->pipe_dir);
  std::filesystem::create_directories(d->log_dir);
  const std::string out = d->dir + "/control.out";
  d->pid = ForkControl(*d, {"-f"}, "", out);
  if (d->pid < 0) return std::string("fork: ") + std::strerror(errno);
  RegisterService(d->pid);  // not an orphan for Supervise to kill
  d->owner = ::getpid();
  const auto until = Clock::now() + kStartWait;
  while (!Exists(d->pipe_dir + "/control")) {
    if (::waitpid(d->pid, nullptr, WNOHANG) == d->pid) {
      ForgetService(d->pid);
      d->pid = -1;
      return control + " -f exited at once: " + TailOf(out);
    }
    if (Clock::now() >= until) {
      ::kill(-d->pid, SIGKILL);
      WaitEnded(d->pid, kStopWait);
      ForgetService(d->pid);
      d->pid = -1;
      return control + " -f made no control pipe in " + std::to_string(kStartWait.count() / 1000) + " s";
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return "";
}

MpsStatus Decide(const EnvLookup& env) {
  const std::string mode = env(kEnvMps).value_or("auto");
  if (mode != "auto" && mode != "0" && mode != "1") {
    throw ConfigError(std::string(kEnvMps) + "='" + mode + "' must be auto, 0 or 1");
  }
  MpsStatus s;
  if (mode == "0") {
    // Off means off: CUDA attaches a process to whatever daemon the pipe
    // folder (default /tmp/nvidia-mps) holds, and a run that stalls a
    // collective faults a shared server (results/gpu/h100-2026-11-27). A
    // folder that cannot exist makes CUDA run the ranks without MPS.
    ::setenv("CUDA_MPS_PIPE_DIRECTORY", kNoDaemonDir, 1);
    s.state = MpsState::kOff;
    s.line = std::string("CUDA MPS off (") + kEnvMps + "=0): " + kCost + "; the ranks kept off any running daemon";
    return s;
  }
  const std::string existing = env("CUDA_MPS_PIPE_DIRECTORY").value_or("/tmp/nvidia-mps");
  if (Exists(existing + "/control")) {
    s.state = MpsState::kReachable;
    s.pipe_dir = existing;
    s.line = "CUDA MPS: using the daemon at " + existing + " (started elsewhere, left running)";
    return s;
  }
  std::string why;
  std::string control;
  if (const auto given = env(kEnvMpsControl)) {
    control = *given;
    if (::access(control.c_str(), X_OK) != 0) why = std::string(kEnvMpsControl) + "='" + control + "' is not executable";
  } else {
    control = FindOnPath(kControlName, env);
    if (control.empty()) why = std::string(kControlName) + " not on PATH";
  }
  if (why.empty()) why = StartDaemon(control, &g_daemon);
  if (!why.empty()) {
    if (mode == "1") throw ConfigError(std::string(kEnvMps) + "=1 but no CUDA MPS daemon: " + why);
    s.state = MpsState::kUnavailable;
    s.line = "CUDA MPS not available (" + why + "): " + kCost + "; " + kEnvMps + "=0 silences this";
    return s;
  }
  ExportDaemon(g_daemon);
  std::atexit(StopMps);
  s.state = MpsState::kStarted;
  s.pipe_dir = g_daemon.pipe_dir;
  s.line = "CUDA MPS started (" + control + " -f, pid " + std::to_string(g_daemon.pid) + ", pipe " +
           g_daemon.pipe_dir + "): the ranks' kernels share the GPU at once; stopped at exit";
  return s;
}

}  // namespace

const MpsStatus& EnsureMps(const EnvLookup& env) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_decided) {
    g_status = Decide(env);
    g_decided = true;
    std::fprintf(stderr, "[ddp::launch] %s\n", g_status.line.c_str());
  }
  return g_status;
}

std::string AttachedSummary(const std::string& report_path) {
  std::ifstream in(report_path);
  int total = 0, attached = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++total;
    if (line.find(" mps=1") != std::string::npos) ++attached;
  }
  if (total == 0) return "";
  return std::to_string(attached) + " of " + std::to_string(total) + " rank processes attached to CUDA MPS";
}

void StopMps() {
  std::lock_guard<std::mutex> lock(g_mu);
  Daemon& d = g_daemon;
  if (d.pid < 0 || d.owner != ::getpid()) return;
  const pid_t quit = ForkControl(d, {}, "quit\n", d.dir + "/control.out");
  if (quit > 0 && !WaitEnded(quit, kStopWait)) {
    ::kill(-quit, SIGKILL);
    WaitEnded(quit, kStopWait);
  }
  const bool clean = WaitEnded(d.pid, kStopWait);
  if (!clean) {
    ::kill(-d.pid, SIGKILL);
    WaitEnded(d.pid, kStopWait);
  }
  ForgetService(d.pid);
  std::string attached = AttachedSummary(d.report);
  if (attached.empty()) attached = "no NCCL rank reported whether it attached";
  std::fprintf(stderr, "[ddp::launch] CUDA MPS stopped (%s): %s\n", clean ? "quit" : "killed: quit was not obeyed",
               attached.c_str());
  for (const char* var : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", kEnvMpsReport}) ::unsetenv(var);
  std::error_code ec;
  std::filesystem::remove_all(d.dir, ec);
  ReleasePath(d.dir);
  d = Daemon{};
}

}  // namespace ddp::launch
