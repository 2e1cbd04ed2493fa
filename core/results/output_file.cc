#include "core/results/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace ddp::results {
namespace {

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string DirOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What PATH names once its symbolic links are followed: the target to
// replace (which may not exist yet), or "" with *error set.
std::string FollowLinks(const std::string& path, std::string* error) {
  std::string target = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) {
      if (errno == ENOENT) return target;  // a new file (or a dangling link's target)
      *error = Errno(target, errno);
      return "";
    }
    if (!S_ISLNK(st.st_mode)) return target;
    char buf[4096];
    const ssize_t n = ::readlink(target.c_str(), buf, sizeof buf - 1);
    if (n < 0) {
      *error = Errno("readlink " + target, errno);
      return "";
    }
    const std::string link(buf, static_cast<std::size_t>(n));
    target = link[0] == '/' ? link : DirOf(target) + "/" + link;
  }
  *error = path + ": too many levels of symbolic links";
  return "";
}

// An open descriptor named by a path: /proc/<pid>/fd/N (and so /dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N, which lead there).
struct Stream {
  pid_t pid = -1;
  int fd = -1;
  std::string link;  // the /proc/<pid>/fd/N (or /dev/fd/N) hop itself
};

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whether `folder`, once resolved, is a process's descriptor table
// (/proc/<pid>/fd or /proc/<pid>/task/<tid>/fd); *pid is that process.
bool IsFdFolder(const std::string& folder, pid_t* pid) {
  char* real = ::realpath(folder.c_str(), nullptr);
  if (real == nullptr) return false;
  const std::string r = real;
  std::free(real);
  if (r.rfind("/proc/", 0) != 0 || !r.ends_with("/fd")) return false;
  const std::string inner = r.substr(6, r.size() - 6 - 3);  // "<pid>" or "<pid>/task/<tid>"
  const std::string first = inner.substr(0, inner.find('/'));
  if (!AllDigits(first)) return false;
  if (first.size() != inner.size()) {
    const std::string rest = inner.substr(first.size());
    if (rest.rfind("/task/", 0) != 0 || !AllDigits(rest.substr(6))) return false;
  }
  *pid = static_cast<pid_t>(std::strtol(first.c_str(), nullptr, 10));
  return true;
}

// The open stream PATH names through its chain of links, if any. A
// descriptor is not a file to replace: the user redirected it
// (`--json /dev/stdout >> app.log`), and replacing the file behind it would
// destroy what the redirect appends to. *error is set when PATH names a
// descriptor that is not open.
std::optional<Stream> StreamOf(const std::string& path, std::string* error) {
  std::string hop = path;
  for (int hops = 0; hops < 40; ++hops) {
    pid_t pid = -1;
    if (AllDigits(BaseOf(hop)) && IsFdFolder(DirOf(hop), &pid)) {
      struct stat st {};
      if (::lstat(hop.c_str(), &st) != 0) {
        *error = path + ": descriptor " + BaseOf(hop) + " is not open";
        return std::nullopt;
      }
      return Stream{pid, std::atoi(BaseOf(hop).c_str()), hop};
    }
    struct stat st {};
    if (::lstat(hop.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::readlink(hop.c_str(), buf, sizeof buf - 1);
    if (n < 0) return std::nullopt;
    const std::string link(buf, static_cast<std::size_t>(n));
    hop = link[0] == '/' ? link : DirOf(hop) + "/" + link;
  }
  return std::nullopt;
}

std::string TempPrefix(const std::string& target) {
  return "." + BaseOf(target) + ".tmp.";
}

// Removes ".NAME.tmp.PID" files next to `target` whose writer is gone.
void RemoveStaleTemporaries(const std::string& target) {
  const std::string dir = DirOf(target), prefix = TempPrefix(target);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      ::unlinkat(::dirfd(d), name.c_str(), 0);
    }
  }
  ::closedir(d);
}

std::string WriteAll(int fd, const std::string& content, const std::string& name) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write " + name, errno);
    done += static_cast<std::size_t>(n);
  }
  return "";
}

// A FIFO, a device, a socket, /proc/self/fd/N: write into it, in place.
// `extra`: O_APPEND for another process's descriptor (never overwrite what
// the stream already holds).
std::string WriteThrough(const std::string& path, const std::string& content, int extra = 0) {
  // O_NONBLOCK for the open only: a FIFO nobody reads would block forever.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | extra);
  if (fd < 0) {
    if (errno == ENXIO) return path + ": nothing is reading it (a FIFO or socket needs a reader)";
    return Errno(path, errno);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string err = WriteAll(fd, content, path);
  if (::close(fd) != 0 && err.empty()) err = Errno("close " + path, errno);
  return err;
}

// Our own descriptor: written on that descriptor itself, so the bytes land
// where the stream stands (its offset, or its end with O_APPEND) and what
// the program prints afterwards follows them. Another process's: opened
// anew in append mode.
std::string WriteToStream(const Stream& s, const std::string& content) {
  if (s.pid != ::getpid()) return WriteThrough(s.link, content, O_APPEND);
  std::fflush(nullptr);  // what stdio holds for this stream goes first
  return WriteAll(s.fd, content, s.link);
}

// Whether the stream can take a write (checked before the run).
std::string CheckStream(const Stream& s) {
  if (s.pid != ::getpid()) {
    return ::access(s.link.c_str(), W_OK) == 0 ? "" : Errno(s.link + " is not writable", errno);
  }
  const int flags = ::fcntl(s.fd, F_GETFL);
  if (flags < 0) return Errno(s.link, errno);
  const int mode = flags & O_ACCMODE;
  return mode == O_WRONLY || mode == O_RDWR ? "" : s.link + " is not open for writing";
}

// A regular file, or none yet: a complete new file renamed over it.
std::string Replace(const std::string& target, const std::string& content) {
  RemoveStaleTemporaries(target);
  const std::string dir = DirOf(target);
  const std::string tmp = dir + "/" + TempPrefix(target) + std::to_string(::getpid());
  struct stat old {};
  const mode_t mode = ::stat(target.c_str(), &old) == 0 ? (old.st_mode & 07777) : 0666;
  ::unlink(tmp.c_str());  // ours from a failed attempt, or a dead namesake's
  // Anonymous until complete: a writer killed while writing leaves nothing.
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  bool anonymous = fd >= 0;
  if (!anonymous) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno("cannot create a file in " + dir, errno);
  if (old.st_mode != 0) ::fchmod(fd, mode);  // the old file's mode, not umask's
  std::string err = WriteAll(fd, content, target);
  if (err.empty() && ::fsync(fd) != 0) err = Errno("fsync " + target, errno);
  if (err.empty() && anonymous) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      err = Errno("cannot name the new file " + tmp, errno);
    }
  }
  if (::close(fd) != 0 && err.empty()) err = Errno("close " + tmp, errno);
  if (err.empty() && ::rename(tmp.c_str(), target.c_str()) != 0) {
    err = Errno("cannot rename " + tmp + " to " + target, errno);
  }
  if (!err.empty()) ::unlink(tmp.c_str());
  return err;
}

}  // namespace

std::string CheckOutputFile(const std::string& path) {
  if (path.empty()) return "empty path";
  std::string stream_error;
  if (const auto s = StreamOf(path, &stream_error)) return CheckStream(*s);
  if (!stream_error.empty()) return stream_error;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return path + " is a directory";
    if (!S_ISREG(st.st_mode)) {
      return ::access(path.c_str(), W_OK) == 0 ? "" : Errno(path + " is not writable", errno);
    }
  }
  std::string error;
  const std::string target = FollowLinks(path, &error);
  if (target.empty()) return error;
  const std::string dir = DirOf(target);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) return Errno("folder " + dir, errno);
  if (!S_ISDIR(dst.st_mode)) return "folder " + dir + " is not a directory";
  // Can a new file be made there? (access() would say yes to root on a
  // read-only filesystem.)
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EROFS && errno != EACCES && errno != EPERM) {
    const std::string probe = dir + "/" + TempPrefix(target) + std::to_string(::getpid());
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::unlink(probe.c_str());
  }
  if (fd < 0) return Errno("cannot create a file in folder " + dir, errno);
  ::close(fd);
  RemoveStaleTemporaries(target);
  return "";
}

std::string WriteOutputFile(const std::string& path, const std::string& content) {
  if (path.empty()) return "empty path";
  std::string stream_error;
  if (const auto s = StreamOf(path, &stream_error)) return WriteToStream(*s, content);
  if (!stream_error.empty()) return stream_error;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return path + " is a directory";
    if (!S_ISREG(st.st_mode)) return WriteThrough(path, content);
  }
  std::string error;
  const std::string target = FollowLinks(path, &error);
  if (target.empty()) return error;
  return Replace(target, content);
}

}  // namespace ddp::results
