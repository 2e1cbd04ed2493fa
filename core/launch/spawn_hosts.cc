#include "core/launch/spawn_hosts.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/cli/config_error.h"

namespace ddp::launch {

std::vector<SpawnHost> SpawnHostsFromEnvironment(const EnvLookup& env) {
  std::vector<SpawnHost> hosts;
  const auto text = env(kEnvSpawnHosts);
  if (!text || text->empty()) return hosts;
  size_t pos = 0;
  while (pos <= text->size()) {
    size_t comma = text->find(',', pos);
    if (comma == std::string::npos) comma = text->size();
    const std::string entry = text->substr(pos, comma - pos);
    const size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == entry.size() ||
        entry.find('/') != std::string::npos) {
      throw ConfigError(std::string(kEnvSpawnHosts) + "='" + *text + "': '" + entry +
                        "' is not NETNS=ADDRESS (e.g. ddpt-h0=10.77.0.1)");
    }
    hosts.push_back({entry.substr(0, eq), entry.substr(eq + 1)});
    pos = comma + 1;
  }
  return hosts;
}

void EnterSpawnHost(const SpawnHost& host) {
  const std::string path = "/run/netns/" + host.netns;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw ConfigError(std::string(kEnvSpawnHosts) + ": cannot enter network namespace " + path +
                      ": " + why);
  }
  ::close(fd);
  ::setenv("DDP_GLOO_ADDR", host.address.c_str(), 1);
}

}  // namespace ddp::launch
