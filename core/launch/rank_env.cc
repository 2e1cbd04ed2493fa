#include "core/launch/rank_env.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/launch/config_error.h"

namespace ddp::launch {

void RankEnv::Validate() const {
  if (world_size < 1) {
    throw ConfigError("WORLD_SIZE=" + std::to_string(world_size) + " must be >= 1");
  }
  if (rank < 0 || rank >= world_size) {
    throw ConfigError("RANK=" + std::to_string(rank) + " must be in [0, WORLD_SIZE=" +
                      std::to_string(world_size) + ")");
  }
  if (local_world_size < 1) {
    throw ConfigError("LOCAL_WORLD_SIZE=" + std::to_string(local_world_size) + " must be >= 1");
  }
  if (local_rank < 0 || local_rank >= local_world_size) {
    throw ConfigError("LOCAL_RANK=" + std::to_string(local_rank) +
                      " must be in [0, LOCAL_WORLD_SIZE=" + std::to_string(local_world_size) + ")");
  }
  if (rdzv.empty()) {
    throw ConfigError(std::string(kEnvRdzv) +
                      " is empty: give a store directory or redis://host:port");
  }
  if (run_id.empty() || run_id.find('/') != std::string::npos) {
    throw ConfigError(std::string(kEnvRunId) + "='" + run_id + "' must be non-empty without '/'");
  }
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

bool LaunchedAsRank(const EnvLookup& env) {
  return env(kEnvRank).has_value() && env(kEnvWorldSize).has_value();
}

int ParseInt(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 9) {
    throw ConfigError(what + "='" + text + "' is not a non-negative integer");
  }
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw ConfigError(what + "='" + text + "' is not a non-negative integer");
    }
  }
  return std::stoi(text);
}

RankEnv RankEnvFromEnvironment(const EnvLookup& env) {
  RankEnv out;
  const auto rank = env(kEnvRank);
  const auto world = env(kEnvWorldSize);
  if (!rank || !world) {
    throw ConfigError(std::string("RANK and WORLD_SIZE must both be set (got RANK=") +
                      (rank ? *rank : "<unset>") + ", WORLD_SIZE=" + (world ? *world : "<unset>") +
                      ")");
  }
  // WORLD_SIZE may legitimately be written "0" by a broken launcher: parse
  // signed so the message says "must be >= 1" rather than "not an integer".
  auto parse_signed = [](const std::string& text, const std::string& what) {
    if (!text.empty() && text[0] == '-') return -ParseInt(text.substr(1), what);
    return ParseInt(text, what);
  };
  out.rank = parse_signed(*rank, kEnvRank);
  out.world_size = parse_signed(*world, kEnvWorldSize);
  const auto local_rank = env(kEnvLocalRank);
  const auto local_world = env(kEnvLocalWorldSize);
  // Without the local variables, assume one host: local == global.
  out.local_rank = local_rank ? parse_signed(*local_rank, kEnvLocalRank) : out.rank;
  out.local_world_size =
      local_world ? parse_signed(*local_world, kEnvLocalWorldSize) : out.world_size;
  const auto rdzv = env(kEnvRdzv);
  if (!rdzv) {
    throw ConfigError(std::string(kEnvRdzv) +
                      " is not set: give a store directory shared by all ranks, or redis://host:port");
  }
  out.rdzv = *rdzv;
  if (const auto run_id = env(kEnvRunId)) out.run_id = *run_id;
  if (const auto backend = env(kEnvBackend)) out.backend = *backend;
  if (const auto share = env(kEnvShareGpu)) out.share_gpu = (*share == "1");
  out.Validate();
  return out;
}

}  // namespace ddp::launch
