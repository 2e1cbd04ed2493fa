// Dumps through the rendezvous store, at failure time only.
//
// The first rank that fails writes a request id under "trace/request" in the
// communicator's store namespace (a rank that fails later adopts the id it
// finds there); every rank's watchdog polls that key and answers a new id
// by writing its dump file and publishing the same dump under
// "trace/dump/<id>/<rank>". The failing rank collects the published dumps,
// so ranks on other hosts (other filesystems) are analysed too. A rank whose
// communicator is destroyed normally leaves its last dump under
// "trace/final/<rank>": a rank that has exited can no longer answer, and
// its final dump says how far it got. Nothing here runs on the hot path.
//
// The store may be used by two threads of this process (the failing
// thread and the watchdog): every operation goes through this channel's
// lock, and each one is a non-blocking read or an overwrite (Store::TryGet,
// Store::Put), so a collection is bounded by its own deadline plus the
// store's own bound on one operation.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/launch/store.h"
#include "core/trace/model.h"

namespace ddp::trace {

class DumpChannel {
 public:
  using Clock = std::chrono::steady_clock;

  // `store`: the communicator's namespaced store.
  DumpChannel(std::shared_ptr<launch::Store> store, int rank, int world_size);

  // The request now in force: ours (written now) or an earlier rank's.
  std::string Request();
  // The current request id, if any. Never waits; store errors read as none.
  std::optional<std::string> CurrentRequest();
  // Publishes `dump` as this rank's answer to dump.request.
  void Publish(const RankDump& dump);
  // Publishes this rank's last dump (its communicator is going away).
  void PublishFinal(const RankDump& dump);

  struct Collected {
    std::vector<std::optional<RankDump>> dumps;  // index = rank
    std::vector<std::string> notes;              // why a rank's dump is missing or unusable
    double waited_s = 0;
  };
  // Polls every other rank's answer to `request` (and to any request that
  // replaced it), or its final dump, until all have one or `until`. `mine`
  // is this rank's own dump.
  Collected Collect(const RankDump& mine, const std::string& request, Clock::time_point until);

  const std::shared_ptr<launch::Store>& store() const { return store_; }

 private:
  std::shared_ptr<launch::Store> store_;
  int rank_;
  int world_size_;
  std::mutex mu_;
};

}  // namespace ddp::trace
