#include "core/comm/options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/cli/config_error.h"
#include "core/cli/number.h"
#include "core/trace/model.h"

namespace ddp::comm {
namespace {

bool ParseFlag(const std::string& name, const std::string& value) {
  if (value == "1") return true;
  if (value == "0") return false;
  throw launch::ConfigError(name + "='" + value + "' must be 0 or 1");
}

// An explicit setting (named `field` in messages), else the variable
// `var` in seconds, else nullopt.
std::optional<std::chrono::milliseconds> Seconds(
    const std::optional<std::chrono::milliseconds>& given, const char* field, const char* var,
    const launch::EnvLookup& env) {
  if (given) {
    if (given->count() <= 0) {
      throw launch::ConfigError(std::string("CommOptions.") + field + " must be positive");
    }
    return *given;
  }
  const auto text = env(var);
  if (!text) return std::nullopt;
  double seconds = 0;  // decimal only: "0x10" is no deadline of 16 s
  if (!cli::ParseDecimal(*text, &seconds) || seconds <= 0 || seconds > 86400 * 7) {
    throw launch::ConfigError(std::string(var) + "='" + *text +
                              "' must be a positive number of seconds (at most a week)");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

}  // namespace

CommOptions OptionsFromRankEnv(const launch::RankEnv& env) {
  CommOptions o;
  o.backend = env.backend.empty() ? "gloo" : env.backend;
  o.rank = env.rank;
  o.world_size = env.world_size;
  o.local_rank = env.local_rank;
  o.local_world_size = env.local_world_size;
  o.rdzv = env.rdzv;
  o.run_id = env.run_id;
  o.share_gpu = env.share_gpu;
  return o;
}

CommOptions OptionsFromEnvironment() {
  return OptionsFromRankEnv(launch::RankEnvFromEnvironment());
}

std::chrono::milliseconds ResolveTimeout(const CommOptions& options,
                                         const launch::EnvLookup& env) {
  return Seconds(options.timeout, "timeout", kEnvTimeout, env).value_or(kDefaultTimeout);
}

std::chrono::milliseconds ResolveStartupTimeout(const CommOptions& options,
                                                std::chrono::milliseconds deadline,
                                                const launch::EnvLookup& env) {
  if (const auto t = Seconds(options.startup_timeout, "startup_timeout", kEnvStartupTimeout, env)) {
    return *t;
  }
  // NCCL's start is slow by nature (a CUDA context per rank, several on one
  // GPU when shared; connections made inside the first collective); Gloo's
  // is TCP connects, and a Gloo rank missing past the deadline is as likely
  // dead as late: the launcher's promise that a fault ends the run within
  // the deadline + 1 s holds for faults at start-up too.
  if (options.backend == "nccl") return std::max(deadline, kDefaultStartupTimeout);
  return deadline;
}

bool ResolveChecked(const CommOptions& options, const launch::EnvLookup& env) {
  if (options.checked) return *options.checked;
  const auto text = env(kEnvCheck);
  return text ? ParseFlag(kEnvCheck, *text) : false;
}

GlooAllgathervAlgorithm ResolveGlooAllgatherv(const CommOptions& options,
                                              const launch::EnvLookup& env) {
  if (options.gloo_allgatherv) return *options.gloo_allgatherv;
  const auto text = env(kEnvGlooAllgatherv);
  if (!text) return GlooAllgathervAlgorithm::kRing;
  for (auto a : {GlooAllgathervAlgorithm::kRing, GlooAllgathervAlgorithm::kDirect}) {
    if (*text == Name(a)) return a;
  }
  throw launch::ConfigError(std::string(kEnvGlooAllgatherv) + "='" + *text +
                            "' must be one of ring|direct");
}

std::size_t ResolveGlooAllgathervPieceBytes(const CommOptions& options,
                                            const launch::EnvLookup& env) {
  constexpr std::size_t kMinKib = 64;
  constexpr std::size_t kMaxKib = 65536;
  if (options.gloo_allgatherv_piece_bytes) {
    const std::size_t b = *options.gloo_allgatherv_piece_bytes;
    if (b < kMinKib * 1024 || b > kMaxKib * 1024) {
      throw launch::ConfigError(
          "CommOptions.gloo_allgatherv_piece_bytes must be in [65536, 67108864]");
    }
    return b;
  }
  const auto text = env(kEnvGlooAllgathervPieceKib);
  if (!text) return kAllgathervPieceBytes;
  const int kib = [&] {
    try {
      return launch::ParseInt(*text, kEnvGlooAllgathervPieceKib);
    } catch (const launch::ConfigError&) {
      return -1;
    }
  }();
  if (kib < static_cast<int>(kMinKib) || kib > static_cast<int>(kMaxKib)) {
    throw launch::ConfigError(std::string(kEnvGlooAllgathervPieceKib) + "='" + *text +
                              "' must be a whole number of KiB in [64, 65536]");
  }
  return static_cast<std::size_t>(kib) * 1024;
}

std::size_t ResolveTraceEntries(const CommOptions& options, const launch::EnvLookup& env) {
  constexpr std::size_t kMax = 1000000;
  if (options.trace_entries) {
    if (*options.trace_entries > kMax) {
      throw launch::ConfigError("CommOptions.trace_entries must be at most 1000000");
    }
    return *options.trace_entries;
  }
  const auto text = env(kEnvTraceEntries);
  if (!text) return trace::kDefaultEntries;
  const int n = [&] {
    try {
      return launch::ParseInt(*text, kEnvTraceEntries);
    } catch (const launch::ConfigError&) {
      return -1;
    }
  }();
  if (n < 0 || static_cast<std::size_t>(n) > kMax) {
    throw launch::ConfigError(std::string(kEnvTraceEntries) + "='" + *text +
                              "' must be a number of entries in [0, 1000000] (0: recorder off)");
  }
  return static_cast<std::size_t>(n);
}

std::string ResolveTraceDir(const CommOptions& options, const std::string& store_description,
                            const launch::EnvLookup& env) {
  if (!options.trace_dir.empty()) return options.trace_dir;
  if (const auto dir = env(kEnvTraceDir); dir && !dir->empty()) return *dir;
  // A file store is one folder per world (SpawnRanks and ddprun make a fresh
  // one and remove it afterwards): the dumps live and go with it.
  constexpr std::string_view kFile = "file:";
  if (store_description.rfind(kFile, 0) == 0) {
    const std::string dir = store_description.substr(kFile.size());
    return dir.substr(0, dir.find(" [")) + "/trace";
  }
  std::string tmp = "/tmp";
  if (const auto t = env("TMPDIR"); t && !t->empty()) tmp = *t;
  return tmp + "/ddp-pitfalls-trace/" + options.run_id;
}

}  // namespace ddp::comm
