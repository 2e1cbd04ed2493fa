#include "core/launch/testing/netns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/launch/testing/processes.h"
#include "core/launch/testing/run_command.h"
#include "core/launch/testing/tun_wire.h"

namespace ddp::launch::testing {
namespace {

constexpr char kNamePrefix[] = "ddpt-";
constexpr char kNetnsDir[] = "/run/netns";
constexpr char kSubnet[] = "10.77.0";

std::string FindTool(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

std::string Ip() { return FindTool({"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}); }
std::string Nft() { return FindTool({"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"}); }

// The live processes in `ns` (a zombie waiting for its reaper is not one).
std::vector<pid_t> NetnsPids(const std::string& ns) {
  std::vector<pid_t> pids;
  std::istringstream in(MustRun({Ip(), "netns", "pids", ns}));
  for (pid_t p; in >> p;) {
    if (!Gone(p)) pids.push_back(p);
  }
  return pids;
}

// Kills what lives in `ns` (bounded wait) and deletes it; never throws.
void RemoveNamespace(const std::string& ns) {
  try {
    for (int round = 0; round < 100; ++round) {
      const auto pids = NetnsPids(ns);
      if (pids.empty()) break;
      for (pid_t p : pids) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    MustRun({Ip(), "netns", "del", ns});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netns: could not remove %s: %s\n", ns.c_str(), e.what());
  }
}

}  // namespace

std::string MustRun(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  Command cmd(argv);
  cmd.deadline = limit;
  const auto r = RunCommand(cmd).outcome;
  if (!r.ok()) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    throw std::runtime_error("'" + line + "' failed (" + r.Describe() + "): " + r.stderr_text);
  }
  return r.stdout_text;
}

std::unique_ptr<NetnsLab> NetnsLab::Create(const LabOptions& options, std::string* why) {
  if (::geteuid() != 0) {
    *why = "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN (CI runs as root)";
    return nullptr;
  }
  if (Ip().empty()) {
    *why = "iproute2's ip is not installed (apt-get install iproute2; tools/setup.sh)";
    return nullptr;
  }
  if (options.wiring == Wiring::kDelayWire && ::access("/dev/net/tun", R_OK | W_OK) != 0) {
    *why = std::string("/dev/net/tun is not usable: ") + std::strerror(errno);
    return nullptr;
  }
  SweepStale();
  static std::atomic<int> counter{0};
  std::unique_ptr<NetnsLab> lab(new NetnsLab);
  lab->options_ = options;
  lab->prefix_ = std::string(kNamePrefix) + std::to_string(::getpid()) + "-" +
                 std::to_string(counter++) + "-";
  // The first namespace tells whether this machine lets us make any.
  try {
    MustRun({Ip(), "netns", "add", lab->ns(0)});
  } catch (const std::exception& e) {
    *why = std::string("cannot make a network namespace here: ") + e.what();
    return nullptr;
  }
  lab->made_.push_back(lab->ns(0));
  try {
    lab->Build();
  } catch (...) {
    lab->Teardown();
    throw;
  }
  return lab;
}

std::string NetnsLab::ns(int host) const { return prefix_ + "h" + std::to_string(host); }

std::string NetnsLab::address(int host) const {
  return std::string(kSubnet) + "." + std::to_string(host + 1);
}

void NetnsLab::Build() {
  const std::string ip = Ip();
  for (int k = 1; k < hosts(); ++k) {
    MustRun({ip, "netns", "add", ns(k)});
    made_.push_back(ns(k));
  }
  for (int k = 0; k < hosts(); ++k) MustRun({ip, "-n", ns(k), "link", "set", "lo", "up"});
  const std::string dev = options_.wiring == Wiring::kBridge ? "eth0" : "tun0";
  if (options_.wiring == Wiring::kBridge) {
    const std::string br = prefix_ + "br";
    MustRun({ip, "netns", "add", br});
    made_.push_back(br);
    MustRun({ip, "-n", br, "link", "add", "br0", "type", "bridge"});
    MustRun({ip, "-n", br, "link", "set", "br0", "up"});
    for (int k = 0; k < hosts(); ++k) {
      const std::string port = "p" + std::to_string(k);
      // Both ends are created inside namespaces: no name is global.
      MustRun({ip, "-n", ns(k), "link", "add", "eth0", "type", "veth", "peer", "name", port,
               "netns", br});
      MustRun({ip, "-n", br, "link", "set", port, "master", "br0"});
      MustRun({ip, "-n", br, "link", "set", port, "up"});
    }
  } else {
    std::vector<std::string> paths;
    for (int k = 0; k < hosts(); ++k) paths.push_back(std::string(kNetnsDir) + "/" + ns(k));
    wire_ = StartDelayWire(paths, kSubnet, options_.delay);
    has_wire_ = true;
    for (int k = 0; k < hosts(); ++k) {
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (true) {
        try {
          MustRun({ip, "-n", ns(k), "link", "show", "tun0"});
          break;
        } catch (const std::exception&) {
          if (std::chrono::steady_clock::now() > limit || Gone(wire_.pid)) {
            throw std::runtime_error("the TUN wire did not create tun0 in " + ns(k));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
  }
  for (int k = 0; k < hosts(); ++k) {
    MustRun({ip, "-n", ns(k), "addr", "add", address(k) + "/24", "dev", dev});
    MustRun({ip, "-n", ns(k), "link", "set", dev, "up"});
  }
}

void NetnsLab::Teardown() {
  if (has_wire_) {
    ::kill(wire_.pid, SIGKILL);
    SuperviseOptions stop;
    stop.deadline = std::chrono::seconds(2);
    stop.capture = false;
    Supervise({wire_}, stop);
    has_wire_ = false;
  }
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) RemoveNamespace(*it);
  made_.clear();
}

NetnsLab::~NetnsLab() { Teardown(); }

std::vector<std::string> NetnsLab::Exec(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {Ip(), "netns", "exec", ns(host)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::pair<std::string, std::string>> NetnsLab::HostEnv(int host) const {
  return {{"DDP_GLOO_ADDR", address(host)}};
}

void NetnsLab::SetLink(int host, bool up) {
  const std::string dev = options_.wiring == Wiring::kBridge ? "eth0" : "tun0";
  MustRun({Ip(), "-n", ns(host), "link", "set", dev, up ? "up" : "down"});
}

void NetnsLab::AddLoss(int host, int percent) {
  const std::string nft = Nft();
  if (nft.empty()) {
    throw std::runtime_error("nft is not installed (apt-get install nftables; tools/setup.sh)");
  }
  // A random drop on input: every packet arriving at this host, TCP
  // segments and ACKs alike, is lost with this probability.
  MustRun(Exec(host, {nft, "add", "table", "ip", "ddp_loss"}));
  MustRun(Exec(host, {nft, "add", "chain", "ip", "ddp_loss", "input",
                      "{ type filter hook input priority 0 ; policy accept ; }"}));
  if (percent >= 100) {
    MustRun(Exec(host, {nft, "add", "rule", "ip", "ddp_loss", "input", "drop"}));
  } else {
    MustRun(Exec(host, {nft, "add", "rule", "ip", "ddp_loss", "input", "numgen", "random", "mod",
                        "100", "<", std::to_string(percent), "drop"}));
  }
}

bool NetnsLab::CanAddLoss(std::string* why) {
  if (!Nft().empty()) return true;
  *why = "nft is not installed (apt-get install nftables; tools/setup.sh)";
  return false;
}

std::vector<pid_t> NetnsLab::Pids(int host) const { return NetnsPids(ns(host)); }

void NetnsLab::KillAll(int host) {
  for (pid_t p : Pids(host)) ::kill(p, SIGKILL);
}

void NetnsLab::InHost(int host, const std::function<void()>& fn) const {
  std::exception_ptr error;
  const std::string path = std::string(kNetnsDir) + "/" + ns(host);
  // setns changes the calling thread only: a fresh thread enters the
  // namespace, so this process's other threads stay where they are.
  std::thread([&] {
    try {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
        throw std::runtime_error("cannot enter " + path + ": " + std::strerror(errno));
      }
      ::close(fd);
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
}

std::unique_ptr<RedisServer> NetnsLab::StartRedis(int host, std::string* why) const {
  RedisPlacement where;
  where.exec_prefix = Exec(host, {});
  where.host = address(host);
  where.port = 6379;  // a fresh namespace: nothing else listens there
  where.run_there = [this, host](const std::function<void()>& f) { InHost(host, f); };
  return RedisServer::Start(why, where);
}

std::vector<CommandResult> RunOnEveryHost(const NetnsLab& lab,
                                          const std::function<Command(int host)>& make) {
  std::vector<CommandResult> results(static_cast<size_t>(lab.hosts()));
  std::vector<std::thread> threads;
  for (int k = 0; k < lab.hosts(); ++k) {
    Command cmd = make(k);
    cmd.argv = lab.Exec(k, cmd.argv);
    for (auto& kv : lab.HostEnv(k)) cmd.env.push_back(kv);
    threads.emplace_back([&results, k, cmd] { results[static_cast<size_t>(k)] = RunCommand(cmd); });
  }
  for (auto& t : threads) t.join();
  return results;
}

int NetnsLab::SweepStale() {
  DIR* dir = ::opendir(kNetnsDir);
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind(kNamePrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kNamePrefix)));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::closedir(dir);
  for (const auto& ns : stale) {
    std::fprintf(stderr, "netns: removing %s, left by a test process that is gone\n", ns.c_str());
    RemoveNamespace(ns);
  }
  return static_cast<int>(stale.size());
}

}  // namespace ddp::launch::testing
