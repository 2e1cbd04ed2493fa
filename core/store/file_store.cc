// The directory store: one file per key, named by the key with every byte
// outside [A-Za-z0-9_-] written as %XX (so '/' cannot make folders and the
// names can be listed back for DeletePrefix). Writers write a temporary
// ".tmp.*" file and then link() it (create-if-absent) or rename() it
// (replace), so a reader never sees half a value.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/store/store_backends.h"

namespace ddp::store {
namespace {

using Clock = std::chrono::steady_clock;

std::string Encode(const std::string& key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> Decode(const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      out += name[i];
      continue;
    }
    if (i + 2 >= name.size()) return std::nullopt;
    const int hi = HexDigit(name[i + 1]), lo = HexDigit(name[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

class FileStore final : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}

  using Store::wait;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    while (true) {
      std::string missing;
      for (const auto& k : keys) {
        if (::access(Path(k).c_str(), F_OK) != 0) {
          missing = k;
          break;
        }
      }
      if (missing.empty()) return;
      CheckDirectory();
      if (Clock::now() >= deadline) {
        throw StoreError("timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for key '" + missing + "' in " + Describe());
      }
      // Short polls: every rendezvous waits here, and a world is many of them.
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(2));
    }
  }

  void Put(const std::string& key, const std::string& value) override {
    const std::string tmp = WriteTemporary(key, value);
    if (::rename(tmp.c_str(), Path(key).c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      throw Failure("rename " + tmp, err);
    }
  }

  bool SetIfAbsent(const std::string& key, const std::string& value) override {
    const std::string tmp = WriteTemporary(key, value);
    const int rc = ::link(tmp.c_str(), Path(key).c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc == 0) return true;
    if (err == EEXIST) return false;
    throw Failure("link " + Path(key), err);
  }

  std::optional<std::string> TryGet(const std::string& key) override {
    const int fd = ::open(Path(key).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) {
        CheckDirectory();
        return std::nullopt;
      }
      throw Failure("open " + Path(key), errno);
    }
    std::string out;
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        throw Failure("read " + Path(key), err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
  }

  int DeletePrefix(const std::string& prefix) override {
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) throw Failure("opendir", errno);
    std::vector<std::string> doomed;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.empty() || name[0] == '.') continue;
      const auto key = Decode(name);
      if (key && key->rfind(prefix, 0) == 0) doomed.push_back(name);
    }
    ::closedir(d);
    int n = 0;
    for (const auto& name : doomed) n += ::unlink((dir_ + "/" + name).c_str()) == 0;
    return n;
  }

  std::string Describe() const override { return "file:" + dir_; }

 private:
  std::string Path(const std::string& key) const {
    const std::string name = Encode(key);
    if (name.size() > 240) {
      throw StoreError("key '" + key.substr(0, 60) + "...' is too long for " + Describe());
    }
    return dir_ + "/" + name;
  }

  StoreError Failure(const std::string& what, int err) const {
    return StoreError("rendezvous store " + Describe() + " failed: " + what + ": " +
                      std::strerror(err));
  }

  // A missing key in a removed directory would otherwise look like a peer
  // that has not arrived yet, until the deadline.
  void CheckDirectory() const {
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw StoreError("rendezvous store " + Describe() + " is gone (the directory was removed)");
    }
  }

  // A hidden temporary file, unique per process and call.
  std::string WriteTemporary(const std::string& key, const std::string& value) {
    static std::atomic<unsigned> counter{0};
    const std::string tmp = dir_ + "/.tmp." + Encode(key).substr(0, 100) + "." +
                            std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      CheckDirectory();
      throw Failure("create " + tmp, err);
    }
    std::size_t done = 0;
    while (done < value.size()) {
      const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw Failure("write " + tmp, err);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return tmp;
  }

  std::string dir_;
};

}  // namespace

std::shared_ptr<Store> MakeFileStore(const std::string& dir, std::chrono::milliseconds timeout) {
  auto store = std::make_shared<FileStore>(dir);
  store->set_timeout(timeout);
  return store;
}

}  // namespace ddp::store
