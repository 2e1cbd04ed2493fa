#include "core/launch/testing/tun_wire.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>

namespace ddp::launch::testing {
namespace {

using Clock = std::chrono::steady_clock;

// tun0 in the namespace at `netns_path`: this process enters it, creates
// the device, and keeps the descriptor (the device lives as long as it).
int OpenTunIn(const std::string& netns_path) {
  const int ns = ::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "tun_wire: enter %s: %s\n", netns_path.c_str(), std::strerror(errno));
    return -1;
  }
  ::close(ns);
  const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;  // raw IP packets, no header
  std::strncpy(ifr.ifr_name, "tun0", IFNAMSIZ - 1);
  if (fd < 0 || ::ioctl(fd, TUNSETIFF, &ifr) != 0) {
    std::fprintf(stderr, "tun_wire: tun0 in %s: %s\n", netns_path.c_str(), std::strerror(errno));
    return -1;
  }
  return fd;
}

struct InFlight {
  Clock::time_point due;
  int to;
  std::vector<uint8_t> bytes;
};

int RunWire(const std::vector<std::string>& paths, const std::string& subnet,
            std::chrono::milliseconds delay) {
  std::vector<pollfd> fds;
  for (const auto& p : paths) {
    const int fd = OpenTunIn(p);
    if (fd < 0) return 1;
    fds.push_back({fd, POLLIN, 0});
  }
  // The destination's host index from its address: subnet.(k+1).
  uint8_t net[3] = {0, 0, 0};
  if (std::sscanf(subnet.c_str(), "%hhu.%hhu.%hhu", &net[0], &net[1], &net[2]) != 3) return 1;
  std::deque<InFlight> queue;  // due times increase: one fixed delay for all
  std::vector<uint8_t> buf(65536);
  while (true) {
    int wait_ms = 1000;
    if (!queue.empty()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(queue.front().due - Clock::now());
      wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    ::poll(fds.data(), fds.size(), wait_ms);
    const auto now = Clock::now();
    for (auto& p : fds) {
      if ((p.revents & POLLIN) == 0) continue;
      while (true) {
        const ssize_t n = ::read(p.fd, buf.data(), buf.size());
        if (n <= 0) break;
        if (n < 20 || (buf[0] >> 4) != 4) continue;  // IPv4 only
        if (buf[16] != net[0] || buf[17] != net[1] || buf[18] != net[2]) continue;
        const int to = buf[19] - 1;
        if (to < 0 || to >= static_cast<int>(fds.size()) || queue.size() >= 65536) continue;
        queue.push_back({now + delay, to, std::vector<uint8_t>(buf.begin(), buf.begin() + n)});
      }
    }
    while (!queue.empty() && queue.front().due <= Clock::now()) {
      const InFlight& f = queue.front();
      if (::write(fds[static_cast<size_t>(f.to)].fd, f.bytes.data(), f.bytes.size()) < 0) {
        // A device that is down refuses writes: the packet is lost, as on a cut link.
      }
      queue.pop_front();
    }
  }
}

}  // namespace

ChildProcess StartDelayWire(const std::vector<std::string>& netns_paths, const std::string& subnet,
                            std::chrono::milliseconds delay) {
  return StartChild(0, [netns_paths, subnet, delay] { return RunWire(netns_paths, subnet, delay); });
}

}  // namespace ddp::launch::testing
