// A throwaway redis-server on a free loopback port (or where a test puts it:
// another network namespace), for tests of the Redis rendezvous and of its
// faults (stopped with SIGSTOP, killed). Started through StartChild, so it
// dies with the test.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/launch/supervise.h"

namespace ddp::launch::testing {

struct RedisPlacement {
  std::vector<std::string> exec_prefix;  // e.g. {"/usr/sbin/ip", "netns", "exec", NS}
  std::string host = "127.0.0.1";        // the address it binds and is reached at
  int port = 0;                          // 0: a free loopback port
  // Runs the readiness PING where the server can be reached (default: here).
  std::function<void(const std::function<void()>&)> run_there;
  // Appended to redis-server's arguments, e.g. {"--requirepass", "secret"}.
  std::vector<std::string> extra_args;
};

class RedisServer {
 public:
  // nullptr (with *why) when redis-server is not installed or would not start.
  static std::unique_ptr<RedisServer> Start(std::string* why, const RedisPlacement& where = {});
  ~RedisServer();

  std::string spec() const { return "redis://" + host_ + ":" + std::to_string(port_); }
  pid_t pid() const { return child_.pid; }
  void Pause();   // SIGSTOP: the kernel still accepts connections; nobody answers
  void Resume();  // SIGCONT
  void Kill();    // SIGKILL: connections refused/reset

 private:
  RedisServer() = default;
  ChildProcess child_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
  std::string dir_;
  bool dead_ = false;
};

}  // namespace ddp::launch::testing
