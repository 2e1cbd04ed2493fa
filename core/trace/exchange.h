// Dumps through the rendezvous store, at failure time only.
//
// A rank that fails writes a new request id under "trace/request" in the
// communicator's store namespace (the first failing rank asks all; ranks
// that fail at the same moment overwrite it, and each accepts the answers
// to every id it sees there from then on); every rank's watchdog polls that
// key and answers a new id by writing its dump file and publishing the same
// dump under "trace/dump/<id>/<rank>". The failing rank collects them,
// so ranks on other hosts (other filesystems) are analysed too. A rank also
// leaves its last word under "trace/last/<rank>": its own dump when it
// fails, its final dump when its communicator is destroyed normally. A rank
// that has exited can no longer answer a request (nor can one that failed
// at the same moment and left before it saw the request), but its last
// dump says how far it got. Nothing here runs on the hot path.
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

#include "core/store/store.h"
#include "core/trace/model.h"

namespace ddp::trace {

class DumpChannel {
 public:
  using Clock = std::chrono::steady_clock;

  // `store`: the communicator's namespaced store.
  DumpChannel(std::shared_ptr<store::Store> store, int rank, int world_size);

  // Writes a new request id and returns it. Throws on a store error.
  std::string Request();
  // The current request id, if any. Never waits; store errors read as none.
  std::optional<std::string> CurrentRequest();
  // Publishes `dump` as this rank's answer to dump.request.
  void Publish(const RankDump& dump);
  // Publishes this rank's last word (its failure, or its communicator going away).
  void PublishLast(const RankDump& dump);
  // Publishes where this rank runs ("vm (10.77.0.2)": its host name and the
  // address it binds), once, when its communicator starts: a peer that
  // collects no dump from it can still say which host went silent.
  void PublishHost(const std::string& host);

  struct Collected {
    std::vector<std::optional<RankDump>> dumps;  // index = rank
    // Why a rank's dump is missing or unusable; for a rank on another host
    // that published its host, "on HOST: ..." (PublishHost).
    std::vector<std::string> notes;
    double waited_s = 0;
  };
  // Polls every other rank's answer to `request` (and to any request that
  // replaced it), or its last dump, until all have one or `until`. `mine`
  // is this rank's own dump.
  Collected Collect(const RankDump& mine, const std::string& request, Clock::time_point until);

  const std::shared_ptr<store::Store>& store() const { return store_; }

 private:
  std::shared_ptr<store::Store> store_;
  int rank_;
  int world_size_;
  std::mutex mu_;
  std::string host_;  // this rank's, once published
};

}  // namespace ddp::trace
