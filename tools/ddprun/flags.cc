#include "tools/ddprun/flags.h"

#include <cmath>
#include <cstdlib>

#include "core/launch/config_error.h"
#include "core/launch/rank_env.h"

namespace ddp::ddprun {
namespace {

using launch::ConfigError;

double ParseSeconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0) {
    throw ConfigError(flag + " '" + text + "' must be a positive number of seconds");
  }
  return v;
}

}  // namespace

Args ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  bool saw_nproc = false;
  size_t i = 0;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argv.size()) throw ConfigError(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      a.command.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (arg == "--help" || arg == "-h") {
      a.help = true;
      return a;
    } else if (arg == "--nproc") {
      const std::string v = value(arg);
      if (!v.empty() && v[0] == '-') throw ConfigError("--nproc " + v + " must be >= 1");
      a.nproc = launch::ParseInt(v, "--nproc");
      if (a.nproc < 1) throw ConfigError("--nproc " + v + " must be >= 1");
      saw_nproc = true;
    } else if (arg == "--rdzv") {
      a.rdzv = value(arg);
      if (a.rdzv.empty()) throw ConfigError("--rdzv needs a directory or redis://host:port");
    } else if (arg == "--run-id") {
      a.run_id = value(arg);
      if (a.run_id.empty() || a.run_id.find('/') != std::string::npos) {
        throw ConfigError("--run-id '" + a.run_id + "' must be non-empty without '/'");
      }
    } else if (arg == "--timeout") {
      a.timeout_s = ParseSeconds(arg, value(arg));
    } else if (arg == "--collective-timeout") {
      a.collective_timeout = value(arg);
      ParseSeconds(arg, a.collective_timeout);
    } else if (arg == "--kill-grace") {
      a.kill_grace_s = ParseSeconds(arg, value(arg));
    } else if (arg == "--backend") {
      a.backend = value(arg);
      if (a.backend != "gloo" && a.backend != "nccl") {
        throw ConfigError("--backend '" + a.backend + "': allowed values are gloo, nccl");
      }
    } else if (arg == "--check") {
      a.check = true;
    } else if (arg == "--share-gpu") {
      a.share_gpu = true;
    } else {
      throw ConfigError("unknown argument '" + arg + "' (put the command after --; see --help)");
    }
  }
  if (!saw_nproc) throw ConfigError("--nproc N is required (N >= 1)");
  if (a.command.empty()) throw ConfigError("no command: give it after --, e.g. -- ./my_binary");
  return a;
}

}  // namespace ddp::ddprun
