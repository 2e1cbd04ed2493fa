// ddprun: a torchrun-style launcher for one host. See flags.h for usage.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "core/launch/config_error.h"
#include "core/launch/rank_env.h"
#include "core/launch/spawn.h"
#include "core/launch/store.h"
#include "core/launch/supervise.h"
#include "tools/ddprun/flags.h"

namespace ddp::ddprun {
namespace {

using launch::ConfigError;

// The binary to exec: a path (relative to the working directory) or a name
// on PATH. Checked before any rank starts, so a typo is exit 2, not N rank
// failures.
std::string ResolveBinary(const std::string& name) {
  auto executable = [](const std::string& p) {
    return ::access(p.c_str(), X_OK) == 0 && !std::filesystem::is_directory(p);
  };
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) throw ConfigError("command '" + name + "' is not an executable file");
    return name;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(candidate)) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  throw ConfigError("command '" + name + "' not found on PATH");
}

int Run(const Args& args) {
  const std::string binary = ResolveBinary(args.command[0]);
  const bool fresh = args.rdzv.empty();
  const std::string rdzv = fresh ? launch::MakeFreshDir("ddprun-rdzv") : args.rdzv;
  launch::OpenStore(rdzv, std::chrono::seconds(5));  // unreachable/unwritable: exit 2 now
  const std::string run_id =
      args.run_id.empty() ? "ddprun-" + std::to_string(::getpid()) + "-" +
                                std::to_string(static_cast<long long>(std::time(nullptr)))
                          : args.run_id;
  if (args.share_gpu) {
    std::fprintf(stderr,
                 "[ddprun] --share-gpu: ranks may share GPUs (one NCCL_HOSTID per rank, "
                 "traffic over sockets): functional mode, timings are not meaningful\n");
  }

  std::vector<launch::ChildProcess> children;
  for (int rank = 0; rank < args.nproc; ++rank) {
    launch::RankEnv env;
    env.rank = rank;
    env.world_size = args.nproc;
    env.local_rank = rank;
    env.local_world_size = args.nproc;
    env.rdzv = rdzv;
    env.run_id = run_id;
    env.backend = args.backend;
    env.share_gpu = args.share_gpu;
    children.push_back(launch::StartChild(rank, [&, env] {
      launch::ExportRankEnv(env);
      if (!args.collective_timeout.empty()) {
        ::setenv("DDP_PITFALLS_TIMEOUT", args.collective_timeout.c_str(), 1);
      }
      if (args.check) ::setenv("DDP_PITFALLS_CHECK", "1", 1);
      std::vector<char*> argv;
      for (const auto& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      std::perror(("ddprun: exec " + binary).c_str());
      return 127;
    }));
  }

  launch::SuperviseOptions sup;
  sup.deadline = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  sup.fail_fast = true;
  sup.echo = true;
  sup.capture = false;
  sup.forward_signals = true;
  sup.kill_grace = std::chrono::milliseconds(static_cast<int64_t>(args.kill_grace_s * 1000));
  const launch::RunResult result = launch::Supervise(std::move(children), sup);

  if (fresh) {
    std::error_code ec;
    std::filesystem::remove_all(rdzv, ec);
  }
  const int code = result.ExitCode();
  if (code != 0) std::fprintf(stderr, "[ddprun] exit %d: %s", code, result.Summary().c_str());
  return code;
}

}  // namespace
}  // namespace ddp::ddprun

int main(int argc, char** argv) {
  // Under `bazel run`, run ranks where the user is, so relative paths work.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY"); wd != nullptr && *wd != '\0') {
    if (::chdir(wd) != 0) std::perror("ddprun: chdir BUILD_WORKING_DIRECTORY");
  }
  try {
    const auto args = ddp::ddprun::ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) {
      std::printf("%s", ddp::ddprun::kUsage);
      return 0;
    }
    return ddp::ddprun::Run(args);
  } catch (const ddp::launch::ConfigError& e) {
    std::fprintf(stderr, "ddprun: %s\n(see ddprun --help)\n", e.what());
    return ddp::launch::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddprun: %s\n", e.what());
    return 1;
  }
}
