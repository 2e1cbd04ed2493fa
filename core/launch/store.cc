#include "core/launch/store.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/launch/config_error.h"
#include "core/launch/rank_env.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/redis_store.h"

namespace ddp::launch {
namespace {

// Gloo's FileStore, with its protected path helpers made usable.
class GlooFileStore : public gloo::rendezvous::FileStore {
 public:
  explicit GlooFileStore(const std::string& dir) : gloo::rendezvous::FileStore(dir) {}
  using gloo::rendezvous::FileStore::check;
  using gloo::rendezvous::FileStore::objectPath;
  using gloo::rendezvous::FileStore::tmpPath;
};

class FileStore final : public Store {
 public:
  explicit FileStore(const std::string& dir) : dir_(dir), impl_(dir) {}

  void set(const std::string& key, const std::vector<char>& data) override { impl_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    return impl_.get(key);
  }
  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    impl_.wait(keys, timeout);
  }

  void Put(const std::string& key, const std::string& value) override {
    // Same file layout as Gloo's set (so get/TryGet read it), but a rename
    // over an existing file replaces it atomically. The temporary name is
    // per process: two writers of one key never share a temporary file.
    const std::string tmp = impl_.tmpPath(key) + "." + std::to_string(getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw gloo::IoException("open " + tmp + ": " + std::strerror(errno));
    const ssize_t n = ::write(fd, value.data(), value.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(value.size())) {
      throw gloo::IoException("short write to " + tmp);
    }
    if (::rename(tmp.c_str(), impl_.objectPath(key).c_str()) != 0) {
      throw gloo::IoException("rename " + tmp + ": " + std::strerror(errno));
    }
  }

  std::optional<std::string> TryGet(const std::string& key) override {
    std::ifstream in(impl_.objectPath(key), std::ios::binary);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  std::string Describe() const override { return "file:" + dir_; }

 private:
  std::string dir_;
  GlooFileStore impl_;
};

// Gloo's RedisStore, with its connection made usable for SET/GET.
class GlooRedisStore : public gloo::rendezvous::RedisStore {
 public:
  GlooRedisStore(const std::string& host, int port) : gloo::rendezvous::RedisStore(host, port) {}
  redisContext* context() { return redis_; }
};

class RedisStore final : public Store {
 public:
  RedisStore(const RedisAddress& addr) : addr_(addr), impl_(addr.host, addr.port) {}

  void set(const std::string& key, const std::vector<char>& data) override { impl_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    return impl_.get(key);
  }
  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    impl_.wait(keys, timeout);
  }

  void Put(const std::string& key, const std::string& value) override {
    Reply reply(static_cast<redisReply*>(redisCommand(impl_.context(), "SET %b %b", key.data(),
                                                      key.size(), value.data(), value.size())));
    if (!reply.get() || reply.get()->type == REDIS_REPLY_ERROR) {
      throw gloo::IoException("redis SET " + key + ": " + Error(reply.get()));
    }
  }

  std::optional<std::string> TryGet(const std::string& key) override {
    Reply reply(static_cast<redisReply*>(
        redisCommand(impl_.context(), "GET %b", key.data(), key.size())));
    if (!reply.get() || reply.get()->type == REDIS_REPLY_ERROR) {
      throw gloo::IoException("redis GET " + key + ": " + Error(reply.get()));
    }
    if (reply.get()->type != REDIS_REPLY_STRING) return std::nullopt;
    return std::string(reply.get()->str, reply.get()->len);
  }

  std::string Describe() const override {
    return "redis://" + addr_.host + ":" + std::to_string(addr_.port);
  }

 private:
  class Reply {
   public:
    explicit Reply(redisReply* r) : r_(r) {}
    ~Reply() {
      if (r_ != nullptr) freeReplyObject(r_);
    }
    Reply(const Reply&) = delete;
    Reply& operator=(const Reply&) = delete;
    redisReply* get() const { return r_; }

   private:
    redisReply* r_;
  };

  std::string Error(redisReply* r) {
    if (r != nullptr) return std::string(r->str, r->len);
    return impl_.context()->errstr;
  }

  RedisAddress addr_;
  GlooRedisStore impl_;
};

class Prefixed final : public Store {
 public:
  Prefixed(std::shared_ptr<Store> base, std::string prefix)
      : base_(std::move(base)), prefix_(std::move(prefix) + "/") {
    set_timeout(base_->timeout());
  }
  void set(const std::string& key, const std::vector<char>& data) override {
    base_->set(prefix_ + key, data);
  }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    return base_->get(prefix_ + key);
  }
  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    base_->wait(full, timeout);
  }
  void Put(const std::string& key, const std::string& value) override {
    base_->Put(prefix_ + key, value);
  }
  std::optional<std::string> TryGet(const std::string& key) override {
    return base_->TryGet(prefix_ + key);
  }
  std::string Describe() const override { return base_->Describe() + " [" + prefix_ + "]"; }

 private:
  std::shared_ptr<Store> base_;
  std::string prefix_;
};

std::shared_ptr<Store> OpenFileStore(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw ConfigError("rendezvous directory '" + dir + "' cannot be created: " +
                      (ec ? ec.message() : "not a directory"));
  }
  // Probe writability now: Gloo would otherwise fail deep inside a connect.
  const std::string probe = dir + "/.ddp_write_probe." + std::to_string(getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    throw ConfigError("rendezvous directory '" + dir + "' is not writable: " +
                      std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return std::make_shared<FileStore>(dir);
}

}  // namespace

std::optional<RedisAddress> ParseRedisSpec(const std::string& spec) {
  constexpr std::string_view kScheme = "redis://";
  if (spec.rfind(kScheme, 0) != 0) return std::nullopt;
  const std::string rest = spec.substr(kScheme.size());
  const auto colon = rest.rfind(':');
  RedisAddress addr;
  if (colon == std::string::npos) {
    addr.host = rest;
  } else {
    addr.host = rest.substr(0, colon);
    addr.port = ParseInt(rest.substr(colon + 1), "redis port in '" + spec + "'");
    if (addr.port < 1 || addr.port > 65535) {
      throw ConfigError("redis port in '" + spec + "' must be in [1, 65535]");
    }
  }
  if (addr.host.empty()) throw ConfigError("redis spec '" + spec + "' has no host");
  return addr;
}

std::shared_ptr<Store> OpenStore(const std::string& spec, std::chrono::milliseconds timeout) {
  if (spec.empty()) {
    throw ConfigError("empty rendezvous spec: give a directory or redis://host:port");
  }
  std::shared_ptr<Store> store;
  if (const auto redis = ParseRedisSpec(spec)) {
    try {
      store = std::make_shared<RedisStore>(*redis);
    } catch (const std::exception& e) {
      throw ConfigError("cannot reach Redis rendezvous " + spec + ": " + e.what());
    }
  } else if (spec.find("://") != std::string::npos) {
    throw ConfigError("rendezvous spec '" + spec +
                      "' has an unknown scheme: use a directory path or redis://host:port");
  } else {
    store = OpenFileStore(spec);
  }
  store->set_timeout(timeout);
  return store;
}

std::shared_ptr<Store> PrefixedStore(std::shared_ptr<Store> base, const std::string& prefix) {
  return std::make_shared<Prefixed>(std::move(base), prefix);
}

}  // namespace ddp::launch
