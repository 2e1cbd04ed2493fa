#include "core/trace/exchange.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "core/trace/dump_json.h"

namespace ddp::trace {
namespace {

constexpr char kRequestKey[] = "trace/request";
constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::string DumpKey(const std::string& request, int rank) {
  return "trace/dump/" + request + "/" + std::to_string(rank);
}

std::string LastKey(int rank) { return "trace/last/" + std::to_string(rank); }
std::string HostKey(int rank) { return "trace/host/" + std::to_string(rank); }

}  // namespace

DumpChannel::DumpChannel(std::shared_ptr<store::Store> store, int rank, int world_size)
    : store_(std::move(store)), rank_(rank), world_size_(world_size) {}

std::string DumpChannel::Request() {
  std::lock_guard<std::mutex> lock(mu_);
  // Always a new id: an old request (an earlier SIGUSR1-style ask, a test)
  // was answered with dumps from before this failure.
  const std::string id =
      "rank" + std::to_string(rank_) + "-pid" + std::to_string(::getpid()) + "-" +
      std::to_string(Clock::now().time_since_epoch().count());
  store_->Put(kRequestKey, id);
  return id;
}

std::optional<std::string> DumpChannel::CurrentRequest() {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    return store_->TryGet(kRequestKey);
  } catch (const std::exception&) {
    return std::nullopt;  // a store that is gone cannot ask for anything
  }
}

void DumpChannel::Publish(const RankDump& dump) {
  const std::string text = Dump(ToJson(dump));
  std::lock_guard<std::mutex> lock(mu_);
  store_->Put(DumpKey(dump.request, rank_), text);
}

void DumpChannel::PublishHost(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  host_ = host;
  store_->Put(HostKey(rank_), host);
}

void DumpChannel::PublishLast(const RankDump& dump) {
  const std::string text = Dump(ToJson(dump));
  std::lock_guard<std::mutex> lock(mu_);
  store_->Put(LastKey(rank_), text);
}

DumpChannel::Collected DumpChannel::Collect(const RankDump& mine, const std::string& request,
                                            Clock::time_point until) {
  const auto start = Clock::now();
  Collected c;
  c.dumps.resize(static_cast<std::size_t>(world_size_));
  c.notes.resize(static_cast<std::size_t>(world_size_));
  c.dumps[static_cast<std::size_t>(rank_)] = mine;
  std::vector<std::string> requests = {request};
  std::vector<std::optional<std::string>> hosts(static_cast<std::size_t>(world_size_));
  for (;;) {
    int missing = 0;
    bool store_failed = false;
    for (int r = 0; r < world_size_; ++r) {
      auto& slot = c.dumps[static_cast<std::size_t>(r)];
      if (slot) continue;
      std::vector<std::string> keys;
      for (const std::string& id : requests) keys.push_back(DumpKey(id, r));
      keys.push_back(LastKey(r));
      for (const std::string& key : keys) {
        std::optional<std::string> text;
        {
          std::lock_guard<std::mutex> lock(mu_);
          try {
            text = store_->TryGet(key);
          } catch (const std::exception& e) {
            c.notes[static_cast<std::size_t>(r)] = std::string("store error: ") + e.what();
            store_failed = true;
          }
        }
        if (!text) continue;
        try {
          RankDump d = ParseDump(*text, "dump of rank " + std::to_string(r) + " in the store");
          if (d.rank != r) throw DumpError("dump of rank " + std::to_string(r) + " says rank " + std::to_string(d.rank));
          slot = std::move(d);
          c.notes[static_cast<std::size_t>(r)].clear();
        } catch (const DumpError& e) {
          c.notes[static_cast<std::size_t>(r)] = std::string("unreadable dump: ") + e.what();
        }
        break;
      }
      missing += !slot.has_value();
      // Where a silent rank runs: one read, while the store answers.
      auto& host = hosts[static_cast<std::size_t>(r)];
      if (!slot && !host && !store_failed) {
        std::lock_guard<std::mutex> lock(mu_);
        try {
          host = store_->TryGet(HostKey(r)).value_or("");
        } catch (const std::exception&) {
          store_failed = true;
        }
      }
    }
    if (missing == 0 || Clock::now() >= until) break;
    // A later failing rank may have replaced the request: its answers count too.
    if (auto now_id = CurrentRequest();
        now_id && std::find(requests.begin(), requests.end(), *now_id) == requests.end()) {
      requests.push_back(*now_id);
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(kPollInterval, until - Clock::now()));
  }
  // Name the host of a silent rank when it is not this rank's own.
  for (int r = 0; r < world_size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (c.dumps[i] || !hosts[i] || hosts[i]->empty() || *hosts[i] == host_) continue;
    c.notes[i] = "on " + *hosts[i] + ": " + (c.notes[i].empty() ? kNoDumpWhy : c.notes[i]);
  }
  c.waited_s = std::chrono::duration<double>(Clock::now() - start).count();
  return c;
}

}  // namespace ddp::trace
