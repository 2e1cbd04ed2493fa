// The Redis store, on hiredis directly (Gloo's RedisStore blocks in
// redisCommand without a timeout: a stopped server hung every rank).
//
// Every command runs with socket timeouts (SO_RCVTIMEO/SO_SNDTIMEO through
// redisSetTimeout) no longer than the store's timeout; a command that gets
// no reply fails with a StoreError saying the server was unreachable. After
// such a failure hiredis's connection is unusable, so every later command
// on it fails at once with the same cause. Other open connections of this
// process to the same server (every communicator has its own) fail at once
// too, for as long as the failed command waited or until the server answers
// again: a rank that has just waited out a deadline on a stopped server must
// not wait out another one in a destructor on its way out. A new connection
// still tries for itself, but in quarantine it gives the server only a
// short PING (a resumed server answers in milliseconds): a rank that opens
// a new communicator after a timed-out store operation must not wait out a
// second deadline either.
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/store/store_backends.h"

namespace ddp::store {
namespace {

using Clock = std::chrono::steady_clock;

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000);
  return buf;
}

// Glob-escapes a prefix for SCAN MATCH.
std::string GlobEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out + "*";
}

// How long a new connection waits for PING from a quarantined server.
constexpr std::chrono::milliseconds kQuarantinedPing{300};

// Servers that just failed to answer: "host:port" -> until when, and why.
struct Quarantine {
  Clock::time_point until;
  std::string why;
};
std::mutex g_quarantine_mu;
std::map<std::string, Quarantine> g_quarantine;

class Reply {
 public:
  explicit Reply(redisReply* r) : r_(r) {}
  ~Reply() {
    if (r_ != nullptr) freeReplyObject(r_);
  }
  Reply(Reply&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  const redisReply* operator->() const { return r_; }

 private:
  redisReply* r_;
};

class RedisStore final : public Store {
 public:
  RedisStore(const RedisAddress& addr, std::chrono::milliseconds timeout) : addr_(addr) {
    set_timeout(timeout);
    ctx_ = redisConnectWithTimeout(addr.host.c_str(), addr.port, ToTimeval(timeout));
    if (ctx_ == nullptr) throw StoreError("cannot allocate a Redis connection");
    if (ctx_->err != 0) {
      const std::string why = ctx_->errstr;
      redisFree(ctx_);
      ctx_ = nullptr;
      throw StoreError(why);
    }
    // A stopped server still accepts TCP connections (the kernel does):
    // only an answer proves it is alive.
    std::string earlier;
    {
      std::lock_guard<std::mutex> q(g_quarantine_mu);
      const auto it = g_quarantine.find(Describe());
      if (it != g_quarantine.end() && Clock::now() < it->second.until) earlier = it->second.why;
    }
    const auto limit = earlier.empty() ? timeout : std::min(timeout, kQuarantinedPing);
    std::string why;
    const auto pong = TryCommand(limit, {"PING"}, &why, /*heed_quarantine=*/false);
    if (!pong) throw StoreError(earlier.empty() ? why : why + "; just before: " + earlier);
    // An error answer (NOAUTH: the server demands a password) makes every
    // later command fail too: a setup problem, found now (exit 2).
    if ((*pong)->type == REDIS_REPLY_ERROR) {
      const std::string answer((*pong)->str, (*pong)->len);
      throw StoreError("refused PING: " + answer +
                       (answer.rfind("NOAUTH", 0) == 0
                            ? " (the server demands a password; the suite's ranks do not send "
                              "one: use a server without requirepass that only the ranks' "
                              "hosts reach)"
                            : ""));
    }
  }
  ~RedisStore() override {
    if (ctx_ != nullptr) redisFree(ctx_);
  }

  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    if (keys.empty()) return;
    const auto deadline = Clock::now() + timeout;
    std::vector<std::string> args = {"EXISTS"};
    args.insert(args.end(), keys.begin(), keys.end());
    auto pause = std::chrono::milliseconds(1);
    while (true) {
      // Each poll may take at most what is left of the wait (but a little
      // at least, so a loaded server is not mistaken for a dead one).
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      const auto limit = std::clamp(left, std::chrono::milliseconds(250), this->timeout());
      const Reply r = Command(limit, args);
      if (r->type == REDIS_REPLY_INTEGER && r->integer == static_cast<long long>(keys.size())) return;
      if (Clock::now() >= deadline) {
        std::string list;
        for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
        throw StoreError("timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for key(s) [" + list + "] in " + Describe());
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(5));  // rendezvous latency
    }
  }

  void Put(const std::string& key, const std::string& value) override {
    Command(timeout(), {"SET", key, value});
  }

  bool SetIfAbsent(const std::string& key, const std::string& value) override {
    const Reply r = Command(timeout(), {"SET", key, value, "NX"});
    return r->type == REDIS_REPLY_STATUS;  // "OK"; nil when the key existed
  }

  std::optional<std::string> TryGet(const std::string& key) override {
    const Reply r = Command(timeout(), {"GET", key});
    if (r->type != REDIS_REPLY_STRING) return std::nullopt;
    return std::string(r->str, r->len);
  }

  int DeletePrefix(const std::string& prefix) override {
    int deleted = 0;
    std::string cursor = "0";
    do {
      const Reply r = Command(timeout(), {"SCAN", cursor, "MATCH", GlobEscape(prefix), "COUNT", "1000"});
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) throw StoreError("unexpected SCAN reply");
      cursor = std::string(r->element[0]->str, r->element[0]->len);
      const redisReply* keys = r->element[1];
      if (keys->elements == 0) continue;
      std::vector<std::string> del = {"DEL"};
      for (std::size_t i = 0; i < keys->elements; ++i) {
        del.emplace_back(keys->element[i]->str, keys->element[i]->len);
      }
      const Reply d = Command(timeout(), del);
      if (d->type == REDIS_REPLY_INTEGER) deleted += static_cast<int>(d->integer);
    } while (cursor != "0");
    return deleted;
  }

  std::string Describe() const override {
    return "redis://" + addr_.host + ":" + std::to_string(addr_.port);
  }

 private:
  // One command, answered within `limit`. Throws StoreError naming the
  // server and the command; a Redis error reply is a StoreError too.
  Reply Command(std::chrono::milliseconds limit, const std::vector<std::string>& args) {
    std::string why;
    auto reply = TryCommand(limit, args, &why);
    if (!reply) throw StoreError("Redis rendezvous " + Describe() + " unreachable: " + why);
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      throw StoreError("Redis rendezvous " + Describe() + " refused " + args[0] + ": " +
                       std::string((*reply)->str, (*reply)->len));
    }
    return std::move(*reply);
  }

  // The reply, or nullopt with *why saying what went wrong.
  std::optional<Reply> TryCommand(std::chrono::milliseconds limit,
                                  const std::vector<std::string>& args, std::string* why,
                                  bool heed_quarantine = true) {
    std::lock_guard<std::mutex> lock(mu_);  // hiredis contexts are not thread-safe
    if (ctx_->err != 0) {
      *why = args[0] + " not sent: an earlier operation failed (" + ctx_->errstr + ")";
      return std::nullopt;
    }
    if (heed_quarantine) {
      std::lock_guard<std::mutex> q(g_quarantine_mu);
      const auto it = g_quarantine.find(Describe());
      if (it != g_quarantine.end() && Clock::now() < it->second.until) {
        *why = args[0] + " not sent: " + it->second.why;
        return std::nullopt;
      }
    }
    const auto sent = Clock::now();
    redisSetTimeout(ctx_, ToTimeval(std::max(limit, std::chrono::milliseconds(1))));
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (r.operator->() == nullptr) {
      // hiredis 0.14 reports a socket timeout as an I/O error with EAGAIN's text.
      const bool timed_out =
          ctx_->err == REDIS_ERR_IO && std::string(ctx_->errstr) == std::strerror(EAGAIN);
      *why = timed_out ? "no reply to " + args[0] + " within " + Seconds(limit) +
                             " (is the server stopped or overloaded?)"
                       : args[0] + " failed: " + ctx_->errstr;
      std::lock_guard<std::mutex> q(g_quarantine_mu);
      g_quarantine[Describe()] = {Clock::now() + (Clock::now() - sent), *why};
      return std::nullopt;
    }
    std::lock_guard<std::mutex> q(g_quarantine_mu);
    g_quarantine.erase(Describe());  // it answers again
    return r;
  }

  RedisAddress addr_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;
};

}  // namespace

std::shared_ptr<Store> MakeRedisStore(const RedisAddress& addr, std::chrono::milliseconds timeout) {
  return std::make_shared<RedisStore>(addr, timeout);
}

}  // namespace ddp::store
