#include "core/launch/failure_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace ddp::launch {

void ReportFailure(bool caused_by_peer, const std::string& what) {
  const char* path = std::getenv(kEnvFailureFile);
  if (path == nullptr || *path == '\0') return;
  // O_EXCL: the first report wins; no temporary file, since the launcher
  // reads it only after this process has ended.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line =
      std::string(caused_by_peer ? "peer " : "self ") + what.substr(0, what.find('\n')) + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

std::optional<FailureReport> ReadFailureReport(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line.size() < 5) return std::nullopt;
  FailureReport r;
  if (line.rfind("peer ", 0) == 0) {
    r.caused_by_peer = true;
  } else if (line.rfind("self ", 0) != 0) {
    return std::nullopt;
  }
  r.what = line.substr(5);
  return r;
}

}  // namespace ddp::launch
