#include "core/store/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/cli/config_error.h"
#include "core/store/store_backends.h"

namespace ddp::store {

using launch::ConfigError;
using launch::ParseInt;

namespace {

class Prefixed final : public Store {
 public:
  Prefixed(std::shared_ptr<Store> base, std::string prefix, std::chrono::milliseconds min_wait)
      : base_(std::move(base)), prefix_(std::move(prefix) + "/"), min_wait_(min_wait) {
    set_timeout(std::max(base_->timeout(), min_wait_));
  }
  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    base_->wait(full, std::max(timeout, min_wait_));
  }
  void Put(const std::string& key, const std::string& value) override {
    base_->Put(prefix_ + key, value);
  }
  std::optional<std::string> TryGet(const std::string& key) override {
    return base_->TryGet(prefix_ + key);
  }
  bool SetIfAbsent(const std::string& key, const std::string& value) override {
    return base_->SetIfAbsent(prefix_ + key, value);
  }
  int DeletePrefix(const std::string& prefix) override {
    return base_->DeletePrefix(prefix_ + prefix);
  }
  std::string Describe() const override { return base_->Describe() + " [" + prefix_ + "]"; }

 private:
  std::shared_ptr<Store> base_;
  std::string prefix_;
  std::chrono::milliseconds min_wait_;
};

std::shared_ptr<Store> OpenFileStore(const std::string& dir, std::chrono::milliseconds timeout) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw ConfigError("rendezvous directory '" + dir + "' cannot be created: " +
                      (ec ? ec.message() : "not a directory"));
  }
  // Probe writability now: a rank would otherwise fail deep inside a connect,
  // and its world would be recorded as an error. An empty file is not
  // enough: on a full filesystem it is created, and only the bytes of the
  // first key fail (ENOSPC, or EFBIG past RLIMIT_FSIZE). So one page of
  // bytes, written and synced, as a key takes.
  const std::string probe = dir + "/.ddp_write_probe." + std::to_string(getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw ConfigError("rendezvous directory '" + dir + "' is not writable: " +
                      std::strerror(errno));
  }
  const std::string page(4096, 'p');
  ssize_t n = -1;
  do {
    n = ::write(fd, page.data(), page.size());
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : n != static_cast<ssize_t>(page.size()) ? ENOSPC : 0;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  ::unlink(probe.c_str());
  if (err != 0) {
    throw ConfigError("rendezvous directory '" + dir + "' cannot be written: " +
                      std::strerror(err));
  }
  return MakeFileStore(dir, timeout);
}

}  // namespace

void Store::set(const std::string& key, const std::vector<char>& data) {
  if (!SetIfAbsent(key, std::string(data.begin(), data.end()))) {
    throw StoreError("key '" + key + "' is already set in " + Describe() +
                     ": was this run id used before? Give every run its own "
                     "DDP_RUN_ID (ddprun --run-id)");
  }
}

std::vector<char> Store::get(const std::string& key) {
  wait({key});
  const auto value = TryGet(key);
  if (!value) throw StoreError("key '" + key + "' vanished from " + Describe());
  return std::vector<char>(value->begin(), value->end());
}

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
  if (const auto redis = ParseRedisSpec(spec)) {
    try {
      return MakeRedisStore(*redis, timeout);
    } catch (const StoreError& e) {
      throw ConfigError("cannot reach Redis rendezvous " + spec + ": " + e.what());
    }
  }
  if (spec.find("://") != std::string::npos) {
    throw ConfigError("rendezvous spec '" + spec +
                      "' has an unknown scheme: use a directory path or redis://host:port");
  }
  return OpenFileStore(spec, timeout);
}

std::shared_ptr<Store> PrefixedStore(std::shared_ptr<Store> base, const std::string& prefix,
                                     std::chrono::milliseconds min_wait) {
  return std::make_shared<Prefixed>(std::move(base), prefix, min_wait);
}

}  // namespace ddp::store
