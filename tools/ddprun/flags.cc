#include "tools/ddprun/flags.h"

#include <cstdio>
#include <set>

#include "core/cli/config_error.h"
#include "core/cli/number.h"
#include "core/launch/rank_env.h"

namespace ddp::ddprun {
namespace {

using launch::ConfigError;

// Seconds in (0, max]: larger values would overflow the millisecond clocks
// (1e10 s once became "deadline expired after 0 ms").
double ParseSeconds(const std::string& flag, const std::string& text, double max) {
  double v = 0;  // decimal only (core/cli/number.h): "0x10" is not 16 s
  if (!cli::ParseDecimal(text, &v) || v <= 0 || v > max) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", max);
    throw ConfigError(flag + " '" + text + "' must be a positive number of seconds, at most " +
                      limit);
  }
  return v;
}

bool ValidRunId(const std::string& id) {
  if (id.empty() || id.size() > kMaxRunIdLength) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// An int in [lo, hi] for `flag`; the message names both bounds.
int ParseBounded(const std::string& flag, const std::string& text, int lo, int hi) {
  const std::string range = "must be an integer in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]";
  int v = -1;
  try {
    if (!text.empty() && text[0] != '-') v = launch::ParseInt(text, flag);
  } catch (const ConfigError&) {
  }
  if (v < lo || v > hi) throw ConfigError(flag + " '" + text + "' " + range);
  return v;
}

}  // namespace

Args ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  bool saw_nproc = false;
  std::string node_rank_text;
  size_t i = 0;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argv.size()) throw ConfigError(flag + " needs a value");
    return argv[++i];
  };
  std::set<std::string> seen;
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      a.command.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    // A flag given twice is a mistake (which one was meant?), not last-wins.
    const std::string name = arg == "--node-rank" ? "--node_rank" : arg;
    if (name.rfind("--", 0) == 0 && !seen.insert(name).second) {
      throw ConfigError(name + " given more than once (give it once)");
    }
    if (arg == "--help" || arg == "-h") {
      a.help = true;
      return a;
    } else if (arg == "--nproc") {
      const std::string v = value(arg);
      if (!v.empty() && v[0] == '-') throw ConfigError("--nproc " + v + " must be >= 1");
      a.nproc = launch::ParseInt(v, "--nproc");
      if (a.nproc < 1) throw ConfigError("--nproc " + v + " must be >= 1");
      if (a.nproc > kMaxNproc) {
        throw ConfigError("--nproc " + v + " must be <= " + std::to_string(kMaxNproc));
      }
      saw_nproc = true;
    } else if (arg == "--nnodes") {
      a.nnodes = ParseBounded(arg, value(arg), 1, kMaxNnodes);
    } else if (arg == "--node_rank" || arg == "--node-rank") {
      node_rank_text = value(arg);
      if (node_rank_text.empty()) throw ConfigError("--node_rank needs a value");
    } else if (arg == "--rdzv") {
      a.rdzv = value(arg);
      if (a.rdzv.empty()) throw ConfigError("--rdzv needs a directory or redis://host:port");
    } else if (arg == "--run-id") {
      a.run_id = value(arg);
      if (!ValidRunId(a.run_id)) {
        throw ConfigError("--run-id '" + a.run_id + "' must be 1 to " +
                          std::to_string(kMaxRunIdLength) +
                          " characters from A-Z a-z 0-9 . _ -");
      }
    } else if (arg == "--timeout") {
      a.timeout_s = ParseSeconds(arg, value(arg), kMaxSeconds);
    } else if (arg == "--collective-timeout") {
      a.collective_timeout = value(arg);
      a.collective_timeout_s = ParseSeconds(arg, a.collective_timeout, kMaxSeconds);
    } else if (arg == "--kill-grace") {
      a.kill_grace_s = ParseSeconds(arg, value(arg), kMaxKillGrace);
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
  if (a.nnodes > 1) {
    if (node_rank_text.empty()) {
      throw ConfigError("--nnodes " + std::to_string(a.nnodes) +
                        " needs --node_rank K (this host's index, 0 <= K < " +
                        std::to_string(a.nnodes) + ")");
    }
    a.node_rank = ParseBounded("--node_rank", node_rank_text, 0, a.nnodes - 1);
    if (a.rdzv.empty()) {
      throw ConfigError("--nnodes " + std::to_string(a.nnodes) +
                        " needs --rdzv redis://HOST:PORT (or a directory every host shares): "
                        "a fresh local directory cannot be reached from the other hosts");
    }
    if (a.run_id.empty()) a.run_id = "ddprun";  // must be equal on every host
    if (static_cast<long>(a.nnodes) * a.nproc > 1L << 20) {
      throw ConfigError("--nnodes x --nproc must be at most " + std::to_string(1 << 20));
    }
  } else if (!node_rank_text.empty() && node_rank_text != "0") {
    throw ConfigError("--node_rank " + node_rank_text + " needs --nnodes M with " +
                      node_rank_text + " < M (default M is 1: only --node_rank 0)");
  }
  if (a.command.empty()) throw ConfigError("no command: give it after --, e.g. -- ./my_binary");
  return a;
}

}  // namespace ddp::ddprun
