// Per-rank progress records in the rendezvous store, and the desync report
// built from them when a collective fails.
//
// Each rank keeps one key, overwritten on entry to every collective (one
// store write per call; switch off with DDP_PITFALLS_PROGRESS=0 for
// benchmarks), when it fails, and when the communicator is finished. Entering
// #N implies #N-1 completed, so one write per call tells both. Reading never
// waits: a dead peer's key simply holds its last record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/comm/types.h"
#include "core/launch/store.h"

namespace ddp::comm {

struct ProgressRecord {
  enum class State : uint8_t { kReady, kEntered, kFailed, kFinished };
  State state = State::kReady;
  int64_t seq = -1;  // kReady: -1; kFinished: the last collective, -1 if none
  OpKind op = OpKind::kBarrier;

  std::string Encode() const;  // "entered 5 allreduce"
  static std::optional<ProgressRecord> Decode(const std::string& text);
  bool operator==(const ProgressRecord&) const = default;
};

class Progress {
 public:
  // `store` is already namespaced for this communicator. Disabled: no writes,
  // and reports say the records are off.
  Progress(std::shared_ptr<launch::Store> store, int rank, int world_size, bool enabled);

  bool enabled() const { return enabled_; }
  void Record(const ProgressRecord& record);
  // Index = rank; nullopt where there is no record (or it cannot be read).
  std::vector<std::optional<ProgressRecord>> ReadAll();

 private:
  std::string Key(int rank) const { return "progress/" + std::to_string(rank); }
  std::shared_ptr<launch::Store> store_;
  int rank_;
  int world_size_;
  bool enabled_;
};

// The readable block: one line per rank, then who never entered collective
// `seq` and who is already past it.
std::string FormatDesyncReport(int my_rank, int64_t seq, OpKind op,
                               const std::vector<std::optional<ProgressRecord>>& records,
                               bool records_enabled);

}  // namespace ddp::comm
