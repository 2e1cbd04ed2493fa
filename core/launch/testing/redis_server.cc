#include "core/launch/testing/redis_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/launch/spawn.h"
#include "core/store/store.h"

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

std::unique_ptr<RedisServer> RedisServer::Start(std::string* why, const RedisPlacement& where) {
  if (::access(kServer, X_OK) != 0) {
    *why = std::string(kServer) + " not installed (apt-get install redis-server; tools/setup.sh)";
    return nullptr;
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::unique_ptr<RedisServer> s(new RedisServer);
    s->host_ = where.host;
    s->port_ = where.port != 0 ? where.port : FreePort();
    s->dir_ = MakeFreshDir("redis");
    std::vector<std::string> args = where.exec_prefix;
    // Off loopback, protected mode would refuse every client (no password).
    const std::vector<std::string> server = {kServer, "--port", std::to_string(s->port_),
                                             "--bind", where.host, "--protected-mode", "no",
                                             "--save", "", "--appendonly", "no", "--dir", s->dir_};
    args.insert(args.end(), server.begin(), server.end());
    args.insert(args.end(), where.extra_args.begin(), where.extra_args.end());
    s->child_ = StartChild(0, [args] {
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      return 127;
    });
    const std::string port = std::to_string(s->port_);
    auto run_there = where.run_there ? where.run_there
                                     : [](const std::function<void()>& f) { f(); };
    // Up when it answers a PING (bounded).
    for (int i = 0; i < 100; ++i) {
      try {
        run_there([&] { store::OpenStore(s->spec(), std::chrono::milliseconds(500)); });
        return s;
      } catch (const std::exception& e) {
        // A server with a password answers, but with NOAUTH: it is up.
        if (std::string(e.what()).find("NOAUTH") != std::string::npos) return s;
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
