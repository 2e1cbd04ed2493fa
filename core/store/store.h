// Rendezvous stores: a directory (one host, or a shared filesystem) and Redis
// (several hosts), behind Gloo's Store interface plus what Gloo's stores
// lack and the suite needs: an overwriting Put (per-rank progress records),
// a non-blocking TryGet (a desync report must never wait on a dead peer's
// key), a create-if-absent SetIfAbsent (a launcher claiming its run id) and
// DeletePrefix (a launcher removing its run's keys).
//
// Every operation is bounded by the store's timeout (the collective
// deadline, when a communicator opened it): a stopped or lost Redis server,
// or a removed directory, is a StoreError naming the store, never a hang.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"

namespace ddp::store {

// A store operation failed: the store is unreachable, did not answer within
// the deadline, or refused the operation. The message names the store.
class StoreError : public std::runtime_error {
 public:
  explicit StoreError(const std::string& message) : std::runtime_error(message) {}
};

class Store : public gloo::rendezvous::Store {
 public:
  // Gloo's interface, on top of the operations below: set refuses to
  // overwrite (naming a reused run id as the likely cause); get waits for
  // the key, up to timeout().
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override = 0;

  // Sets or replaces a value (atomically: readers see old or new, never half).
  virtual void Put(const std::string& key, const std::string& value) = 0;
  // The value if the key exists now; never waits for the key (but a store
  // that does not answer is a StoreError after timeout()).
  virtual std::optional<std::string> TryGet(const std::string& key) = 0;
  // Creates the key unless it exists; false when it already existed.
  virtual bool SetIfAbsent(const std::string& key, const std::string& value) = 0;
  // Deletes every key that starts with `prefix`; returns how many.
  virtual int DeletePrefix(const std::string& prefix) = 0;
  // "file:/path" or "redis://host:port", for messages.
  virtual std::string Describe() const = 0;

  // Bound on every operation (and on wait()/get() without an explicit one).
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 private:
  std::chrono::milliseconds timeout_{std::chrono::seconds(60)};
};

// Opens a store from a spec: "redis://host:port" or a directory path
// (created if missing). Throws ConfigError for a bad spec, a directory that
// cannot be created or written, or a Redis server that does not answer a
// PING within `timeout`.
std::shared_ptr<Store> OpenStore(const std::string& spec,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A view of `base` whose keys all start with "prefix/". Its waits last at
// least `min_wait`, whatever a caller asks: Gloo waits for its peers' keys
// for its context's timeout (the collective deadline), and a rendezvous
// needs the start-up bound (core/comm/options.h).
std::shared_ptr<Store> PrefixedStore(std::shared_ptr<Store> base, const std::string& prefix,
                                     std::chrono::milliseconds min_wait = {});

// Parses "redis://host:port"; nullopt when `spec` is not a redis spec; throws
// ConfigError for a malformed one.
struct RedisAddress {
  std::string host;
  int port = 6379;
};
std::optional<RedisAddress> ParseRedisSpec(const std::string& spec);

}  // namespace ddp::store
