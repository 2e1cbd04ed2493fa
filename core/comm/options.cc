#include "core/comm/options.h"

#include <cmath>
#include <cstdlib>

#include "core/launch/config_error.h"

namespace ddp::comm {
namespace {

bool ParseFlag(const std::string& name, const std::string& value) {
  if (value == "1") return true;
  if (value == "0") return false;
  throw launch::ConfigError(name + "='" + value + "' must be 0 or 1");
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
  if (options.timeout) {
    if (options.timeout->count() <= 0) {
      throw launch::ConfigError("CommOptions.timeout must be positive");
    }
    return *options.timeout;
  }
  const auto text = env(kEnvTimeout);
  if (!text) return kDefaultTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > 86400 * 7) {
    throw launch::ConfigError(std::string(kEnvTimeout) + "='" + *text +
                              "' must be a positive number of seconds (at most a week)");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

bool ResolveChecked(const CommOptions& options, const launch::EnvLookup& env) {
  if (options.checked) return *options.checked;
  const auto text = env(kEnvCheck);
  return text ? ParseFlag(kEnvCheck, *text) : false;
}

bool ResolveProgress(const CommOptions& options, const launch::EnvLookup& env) {
  if (options.record_progress) return *options.record_progress;
  const auto text = env(kEnvProgress);
  return text ? ParseFlag(kEnvProgress, *text) : true;
}

}  // namespace ddp::comm
