#include "core/cli/config_error.h"

namespace ddp::launch {

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

}  // namespace ddp::launch
