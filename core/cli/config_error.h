// The one error type for bad input (flags, environment, rendezvous specs).
//
// Every CLI in the suite turns it into exit code 2 with its message, so the
// message must name the flag or variable and the allowed values.
//
// Namespace ddp::launch, as when it lived in core/launch: it moved here, below
// core/launch and core/store (which both throw it), with its name unchanged.
#pragma once

#include <stdexcept>
#include <string>

namespace ddp::launch {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

// Exit code for bad usage, shared by every binary of the suite.
inline constexpr int kExitUsage = 2;

// Parses a non-negative decimal int; throws ConfigError naming `what`.
int ParseInt(const std::string& text, const std::string& what);

}  // namespace ddp::launch
