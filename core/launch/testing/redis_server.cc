#include "core/launch/testing/redis_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/launch/spawn.h"
#include "core/launch/store.h"

namespace ddp::launch::testing {
namespace {

constexpr char kServer[] = "/usr/bin/redis-server";

// A port nobody listens on right now (the kernel picks it).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace

std::unique_ptr<RedisServer> RedisServer::Start(std::string* why) {
  if (::access(kServer, X_OK) != 0) {
    *why = std::string(kServer) + " not installed (apt-get install redis-server; tools/setup.sh)";
    return nullptr;
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::unique_ptr<RedisServer> s(new RedisServer);
    s->port_ = FreePort();
    s->dir_ = MakeFreshDir("redis");
    const std::string port = std::to_string(s->port_), dir = s->dir_;
    s->child_ = StartChild(0, [port, dir] {
      ::execl(kServer, kServer, "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--dir", dir.c_str(), nullptr);
      return 127;
    });
    // Up when it answers a PING (bounded).
    for (int i = 0; i < 100; ++i) {
      try {
        OpenStore(s->spec(), std::chrono::milliseconds(500));
        return s;
      } catch (const std::exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    *why = "redis-server did not answer on port " + port;
  }
  return nullptr;
}

void RedisServer::Pause() { ::kill(child_.pid, SIGSTOP); }
void RedisServer::Resume() { ::kill(child_.pid, SIGCONT); }
void RedisServer::Kill() {
  ::kill(child_.pid, SIGKILL);
  dead_ = true;
}

RedisServer::~RedisServer() {
  ::kill(child_.pid, SIGCONT);
  ::kill(child_.pid, SIGTERM);
  SuperviseOptions stop;
  stop.deadline = std::chrono::seconds(5);
  stop.kill_grace = std::chrono::seconds(1);
  stop.capture = false;
  Supervise({child_}, stop);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace ddp::launch::testing
