// Test hosts on this machine: Linux network namespaces with private
// addresses, for running ranks "on several hosts" and breaking the network
// between them. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
//
// Topology (Wiring::kBridge): host k is namespace "<prefix>h<k>" with eth0 =
// 10.77.0.<k+1>/24, a veth pair whose other end is a port of a bridge in
// namespace "<prefix>br" — a switch between the hosts. The kernel's own
// network stack all the way: TCP, ARP, a link that can be taken down.
//
// Wiring::kDelayWire: instead of the bridge, each host has tun0 =
// 10.77.0.<k+1>/24 and one userspace process (tun_wire.h) carries every IP
// packet from one host's tun0 to the destination's after a fixed delay: the
// added latency `tc netem` would give, on kernels without sch_netem.
//
// Everything made here is removed by the destructor — the processes still
// in the namespaces (SIGKILL), the namespaces, and with them their links —
// also when a test fails. Names carry the creating process's pid
// ("ddpt-<pid>-<n>-"), so SweepStale() can remove what a killed test run
// left behind; Create() calls it first.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/launch/supervise.h"
#include "core/launch/testing/redis_server.h"
#include "core/launch/testing/run_command.h"

namespace ddp::launch::testing {

enum class Wiring { kBridge, kDelayWire };

struct LabOptions {
  int hosts = 2;
  Wiring wiring = Wiring::kBridge;
  std::chrono::milliseconds delay{0};  // kDelayWire: one way, per packet
};

class NetnsLab {
 public:
  // nullptr, with *why, when namespaces cannot be made here (not root, no
  // CAP_NET_ADMIN, no iproute2, no TUN device for kDelayWire). Throws
  // std::runtime_error when something fails after they could be made.
  static std::unique_ptr<NetnsLab> Create(const LabOptions& options, std::string* why);
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  int hosts() const { return options_.hosts; }
  std::string ns(int host) const;       // the namespace's name
  std::string address(int host) const;  // "10.77.0.<host+1>"
  std::string prefix() const { return prefix_; }

  // `argv` run inside host's namespace (prefixed with ip netns exec).
  std::vector<std::string> Exec(int host, const std::vector<std::string>& argv) const;
  // The variables a rank on `host` needs: DDP_GLOO_ADDR = its address.
  std::vector<std::pair<std::string, std::string>> HostEnv(int host) const;

  // Takes the host's link down or up (its eth0 / tun0: nothing gets in or out).
  void SetLink(int host, bool up);
  // Drops `percent`% of the packets arriving at `host`, at random (nftables).
  void AddLoss(int host, int percent);
  // False, with *why, when AddLoss cannot work here (no nft).
  static bool CanAddLoss(std::string* why);
  // The processes living in host's namespace now.
  std::vector<pid_t> Pids(int host) const;
  // SIGKILL to every process in host's namespace.
  void KillAll(int host);

  // Runs `fn` on a thread inside host's namespace (its sockets are there).
  void InHost(int host, const std::function<void()>& fn) const;

  // A redis-server inside host's namespace, on its address.
  std::unique_ptr<RedisServer> StartRedis(int host, std::string* why) const;

  // Removes namespaces named by a test process that no longer exists.
  // Returns how many.
  static int SweepStale();

 private:
  NetnsLab() = default;
  void Build();
  void Teardown();

  LabOptions options_;
  std::string prefix_;
  std::vector<std::string> made_;  // namespaces made so far, to delete
  bool has_wire_ = false;
  ChildProcess wire_;
};

// Runs make(k) inside every host k at once (argv prefixed with the lab's
// Exec, DDP_GLOO_ADDR set to the host's address) and waits for all.
std::vector<CommandResult> RunOnEveryHost(const NetnsLab& lab,
                                          const std::function<Command(int host)>& make);

// Runs a command (argv[0] a path) to completion within `limit`; throws
// std::runtime_error with its output when it fails. Returns its stdout.
std::string MustRun(const std::vector<std::string>& argv,
                    std::chrono::milliseconds limit = std::chrono::seconds(10));

}  // namespace ddp::launch::testing
