// ddprun: a torchrun-style launcher for one host. See flags.h for usage and
// core/launch/README.md for the guarantees.
//
// A run is four steps, each its own function so that other ways of placing
// ranks (several hosts) can replace one step without touching the others:
// Prepare (check everything that can be checked before a rank starts, claim
// the run id), StartRanks, Supervise, and Finish (delete the run's keys,
// report who failed first).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/cli/config_error.h"
#include "core/launch/failure_report.h"
#include "core/launch/guardian.h"
#include "core/launch/interrupt.h"
#include "core/launch/limits.h"
#include "core/launch/rank_env.h"
#include "core/launch/mps.h"
#include "core/launch/share_gpu.h"
#include "core/launch/spawn.h"
#include "core/launch/supervise.h"
#include "core/store/store.h"
#include "tools/ddprun/flags.h"

namespace ddp::ddprun {
namespace {

using launch::ConfigError;
using std::chrono::milliseconds;

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

milliseconds Ms(double seconds) { return milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000))); }

// Everything a run needs, decided before the first rank starts.
struct Plan {
  std::string binary;
  std::string run_dir;  // ddprun's own folder: failure reports, and the store unless --rdzv
  std::string rdzv;
  std::string run_id;
  std::shared_ptr<store::Store> store;  // the launcher's connection, for the claim and cleanup
  // The outermost folder of a --rdzv directory that did not exist and that
  // opening the store created (e.g. /tmp/a for /tmp/a/b/c); "" otherwise.
  std::string created_rdzv;
};

// The outermost missing folder on the way to directory store `spec`, or ""
// when it exists (or is no directory spec).
std::string OutermostMissing(const std::string& spec) {
  if (spec.rfind("redis://", 0) == 0) return "";
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(spec, ec).lexically_normal();
  if (ec) return "";
  std::string missing;
  while (!p.empty() && !std::filesystem::exists(p, ec) && p != p.parent_path()) {
    missing = p.string();
    p = p.parent_path();
  }
  return missing;
}

// Removes the folders ddprun created for --rdzv, innermost first, each only
// if empty (never a file someone else put there): a run leaves no folders
// behind that it made.
void RemoveCreatedFolders(const Plan& p) {
  if (p.created_rdzv.empty()) return;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(p.rdzv, ec).lexically_normal();
  const std::filesystem::path stop(p.created_rdzv);
  while (!ec) {
    if (!std::filesystem::remove(dir, ec) || ec) return;  // not empty, or gone: stop
    if (dir == stop) return;
    dir = dir.parent_path();
  }
}

std::string DefaultRunId() {
  return "ddprun-" + std::to_string(::getpid()) + "-" +
         std::to_string(static_cast<long long>(std::time(nullptr)));
}

// This host's claim on the run id: one key per host, so that the hosts of
// one --nnodes run share the id while two runs cannot.
// Four digits (--nnodes <= 1024): no host's key is a prefix of another's,
// so DeletePrefix removes exactly one.
std::string ClaimKey(const Args& args, const std::string& run_id, int node) {
  if (args.nnodes == 1) return run_id + "/ddprun";
  char digits[16];
  std::snprintf(digits, sizeof digits, "%04d", node);
  return run_id + "/ddprun/node" + digits;
}

// Claims the run id in the store: two runs sharing keys would read each
// other's addresses ("key already set", or worse, a wrong peer).
void ClaimRunId(store::Store& store, const Args& args, const std::string& run_id) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string who = "ddprun pid " + std::to_string(::getpid()) + " on " + host;
  const std::string key = ClaimKey(args, run_id, args.node_rank);
  if (!store.SetIfAbsent(key, who)) {
    const auto owner = store.TryGet(key);
    const std::string what =
        args.nnodes > 1 ? "--run-id '" + run_id + "' with --node_rank " +
                              std::to_string(args.node_rank)
                        : "--run-id '" + run_id + "'";
    throw ConfigError(what + " was already used in " + store.Describe() + " (by " +
                      owner.value_or("an earlier run") +
                      ") and its keys are still there: pick another --run-id, or delete "
                      "the keys starting with '" + run_id + "/'");
  }
}

Plan Prepare(const Args& args) {
  Plan p;
  p.binary = ResolveBinary(args.command[0]);
  launch::EnsureFileLimit(launch::FilesNeeded(args.nproc), std::to_string(args.nproc) + " ranks");
  p.run_dir = launch::MakeFreshDir("ddprun-rdzv");
  launch::GuardPath(p.run_dir);  // removed even if ddprun is killed
  p.rdzv = args.rdzv.empty() ? p.run_dir : args.rdzv;
  p.run_id = args.run_id.empty() ? DefaultRunId() : args.run_id;
  // Unreachable or unwritable: exit 2 now, within the collective deadline.
  const milliseconds probe = args.collective_timeout_s > 0
                                 ? std::min(Ms(args.collective_timeout_s), milliseconds(5000))
                                 : milliseconds(5000);
  p.created_rdzv = OutermostMissing(p.rdzv);
  try {
    p.store = store::OpenStore(p.rdzv, probe);
    ClaimRunId(*p.store, args, p.run_id);
  } catch (...) {
    RemoveCreatedFolders(p);
    throw;
  }
  return p;
}

std::vector<launch::ChildProcess> StartRanks(const Args& args, const Plan& plan) {
  std::vector<launch::ChildProcess> children;
  for (int rank = 0; rank < args.nproc; ++rank) {
    launch::RankEnv env;
    env.rank = args.node_rank * args.nproc + rank;
    env.world_size = args.nnodes * args.nproc;
    env.local_rank = rank;
    env.local_world_size = args.nproc;
    env.node_rank = args.node_rank;
    env.rdzv = plan.rdzv;
    env.run_id = plan.run_id;
    env.backend = args.backend;
    env.share_gpu = args.share_gpu;
    const std::string failure_file = plan.run_dir + "/rank-" + std::to_string(rank) + ".failure";
    children.push_back(launch::StartChild(env.rank, [&, env, failure_file] {
      launch::ExportRankEnv(env);
      ::setenv(launch::kEnvFailureFile, failure_file.c_str(), 1);
      if (!args.collective_timeout.empty()) {
        ::setenv("DDP_PITFALLS_TIMEOUT", args.collective_timeout.c_str(), 1);
      }
      if (args.check) ::setenv("DDP_PITFALLS_CHECK", "1", 1);
      std::vector<char*> argv;
      for (const auto& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(plan.binary.c_str(), argv.data());
      std::perror(("ddprun: exec " + plan.binary).c_str());
      return 127;
    }));
    children.back().failure_file = failure_file;
  }
  return children;
}

launch::RunResult SuperviseRanks(const Args& args, std::vector<launch::ChildProcess> children) {
  launch::SuperviseOptions sup;
  sup.deadline = Ms(args.timeout_s);
  sup.fail_fast = true;
  sup.echo = true;
  sup.capture = false;
  sup.forward_signals = true;
  sup.kill_grace = Ms(args.kill_grace_s);
  return launch::Supervise(std::move(children), sup);
}

// Deletes the run's keys (with --nnodes, this host's claim, and the rest
// once no other host's claim is left: the last host out cleans up) and
// folder; reports. Returns the exit code.
int Finish(const Args& args, const Plan& plan, const launch::RunResult& result) {
  try {
    // Briefly: a store that stopped answering must not hold the exit.
    plan.store->set_timeout(std::min(plan.store->timeout(), milliseconds(250)));
    bool last = true;
    if (args.nnodes > 1) {
      plan.store->DeletePrefix(ClaimKey(args, plan.run_id, args.node_rank));
      for (int node = 0; node < args.nnodes && last; ++node) {
        last = !plan.store->TryGet(ClaimKey(args, plan.run_id, node)).has_value();
      }
    }
    if (last) {
      plan.store->DeletePrefix(plan.run_id + "/");
      RemoveCreatedFolders(plan);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[ddprun] warning: could not delete the run's keys ('%s/...'): %s\n",
                 plan.run_id.c_str(), e.what());
  }
  std::error_code ec;
  std::filesystem::remove_all(plan.run_dir, ec);
  launch::ReleasePath(plan.run_dir);
  const int code = result.ExitCode();
  if (code != 0) std::fprintf(stderr, "[ddprun] exit %d: %s", code, result.Summary().c_str());
  return code;
}

int Run(const Args& given) {
  // Ranks share GPUs when asked (--share-gpu, DDP_SHARE_GPU=1), or for NCCL
  // when this host's ranks outnumber its visible GPUs (share_gpu.h).
  Args args = given;
  const int gpus = args.backend == "nccl" && !args.share_gpu ? launch::VisibleGpuCount() : -1;
  const launch::ShareGpuDecision share =
      launch::DecideShareGpu(args.backend, args.share_gpu, args.nproc, gpus);
  args.share_gpu = share.share;
  // From here on, Ctrl-C or SIGTERM stops the ranks and is reported.
  launch::InstallInterruptHandlers();
  const Plan plan = Prepare(args);
  if (args.share_gpu) {
    std::fprintf(stderr,
                 "[ddprun] ranks share GPUs, one NCCL_HOSTID per rank (%s): traffic over "
                 "sockets, functional mode, timings are not meaningful\n",
                 share.why.c_str());
    if (args.backend == "nccl") launch::EnsureMps();
  }
  std::vector<launch::ChildProcess> children;
  try {
    children = StartRanks(args, plan);
  } catch (...) {
    launch::SuperviseOptions stop;
    stop.deadline = milliseconds(0);
    stop.kill_grace = milliseconds(0);
    Finish(args, plan, launch::Supervise(std::move(children), stop));
    throw;
  }
  return Finish(args, plan, SuperviseRanks(args, std::move(children)));
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
