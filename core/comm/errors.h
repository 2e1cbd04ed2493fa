// Typed errors of the Comm API. Every collective failure is one of these,
// so callers (tests, repro binaries) can tell a deadline from a dead peer
// from a checked-mode mismatch, and print one readable block.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cli/config_error.h"
#include "core/collective/types.h"

namespace ddp::comm {

// Bad input (unknown backend, W < 1, rank >= W, unusable store): exit 2.
using ConfigError = launch::ConfigError;

// Base of every runtime failure of a collective.
class CommError : public std::runtime_error {
 public:
  explicit CommError(const std::string& message) : std::runtime_error(message) {}
};

// What the failing call was, and where every rank was (the desync report:
// the flight recorder analyzer's verdict over every rank's dump).
struct FailureContext {
  int rank = -1;
  int world_size = 0;
  std::string backend;
  OpKind op = OpKind::kBarrier;
  int64_t seq = -1;
  std::chrono::milliseconds elapsed{0};
  std::chrono::milliseconds deadline{0};
  std::string engine_message;  // what Gloo/NCCL said
  std::string report;          // the desync report block (may be empty)
  std::string verdict;         // its first line: the analyzer's one-line verdict
  std::string mismatch_class;  // "missing ranks", "op type", "size", "dtype", "state", ...
  std::vector<int> culprits;   // the ranks the verdict blames
  std::string dump_path;       // this rank's flight recorder dump file, if written
};

// The verdict's fields on one line, for logs and tests:
// "class=missing ranks culprits=1,2 op=allreduce seq=1".
inline std::string VerdictFields(const FailureContext& c) {
  std::string culprits;
  for (int r : c.culprits) culprits += (culprits.empty() ? "" : ",") + std::to_string(r);
  return "class=" + c.mismatch_class + " culprits=" + culprits + " op=" + Name(c.op) + " seq=" + std::to_string(c.seq);
}

// The call did not complete within the deadline (a peer is missing, stuck
// elsewhere, or desynchronised).
class DeadlineError : public CommError {
 public:
  DeadlineError(const std::string& message, FailureContext context)
      : CommError(message), context_(std::move(context)) {}
  const FailureContext& context() const { return context_; }

 private:
  FailureContext context_;
};

// The engine reported a broken peer connection (a rank died) or another
// engine failure before the deadline.
class PeerError : public CommError {
 public:
  PeerError(const std::string& message, FailureContext context)
      : CommError(message), context_(std::move(context)) {}
  const FailureContext& context() const { return context_; }

 private:
  FailureContext context_;
};

// Checked mode: the ranks' fingerprints of this call disagree. Thrown on
// every rank, before the engine is touched, with the same message.
class CheckError : public CommError {
 public:
  explicit CheckError(const std::string& message) : CommError(message) {}
};

}  // namespace ddp::comm
