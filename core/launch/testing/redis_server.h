// A throwaway redis-server on a free loopback port, for tests of the Redis
// rendezvous and of its faults (stopped with SIGSTOP, killed). Started
// through StartChild, so it dies with the test.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/launch/supervise.h"

namespace ddp::launch::testing {

class RedisServer {
 public:
  // nullptr (with *why) when redis-server is not installed or would not start.
  static std::unique_ptr<RedisServer> Start(std::string* why);
  ~RedisServer();

  std::string spec() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return child_.pid; }
  void Pause();   // SIGSTOP: the kernel still accepts connections; nobody answers
  void Resume();  // SIGCONT
  void Kill();    // SIGKILL: connections refused/reset

 private:
  RedisServer() = default;
  ChildProcess child_;
  int port_ = 0;
  std::string dir_;
  bool dead_ = false;
};

}  // namespace ddp::launch::testing
