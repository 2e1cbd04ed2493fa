#include "core/results/provenance.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "core/env/driver_check.h"
#include "core/env/report.h"

namespace ddp::results {
namespace {

// First line of a shell command's output, "" on failure.
std::string FirstLine(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "";
  std::array<char, 256> buf{};
  std::string line;
  if (std::fgets(buf.data(), buf.size(), pipe) != nullptr) line = buf.data();
  const int rc = pclose(pipe);
  if (rc != 0) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::string GitCommit() {
  if (const char* c = std::getenv("DDP_PITFALLS_COMMIT")) return c;
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return GitCommitOf(ws != nullptr ? ws : ".");
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string GitCommitOf(const std::string& dir) {
  const std::string git = "git -C '" + dir + "' ";
  const std::string head = FirstLine(git + "rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  const std::string dirty = FirstLine(
      git + "status --porcelain --untracked-files=no -- . ':(exclude)results' 2>/dev/null");
  return dirty.empty() ? head : head + "+dirty";
}

Provenance CollectProvenance() {
  Provenance p;
  p.commit = GitCommit();
  p.date = UtcNow();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  p.host = host;
  p.cpu = env::CpuModel();
  p.gloo = env::GlooVersion();
  p.tcp_congestion = env::TcpCongestionControl();
  const env::GpuProbe g = env::ProbeGpus();
  if (g.gpus.empty()) {
    p.gpu = "none (" + g.why_no_gpu + ")";
  } else {
    for (std::size_t i = 0; i < g.gpus.size(); ++i) {
      p.gpu += (i > 0 ? ", " : "") + g.gpus[i].name;
    }
  }
  p.nccl = g.built_with_cuda ? g.nccl_runtime : "n/a";
  // The NVIDIA release ("580.159.04") is what a reader cites; the CUDA
  // version the driver supports alone does not name it.
  const std::string release = env::NvidiaDriverRelease();
  p.cuda = g.built_with_cuda ? "runtime " + g.cuda_runtime + ", driver " + g.driver +
                                   (release.empty() ? "" : " (NVIDIA " + release + ")")
                             : "n/a";
  return p;
}

Json ToJson(const Provenance& p) {
  Json j;
  j["commit"] = p.commit;
  j["date"] = p.date;
  j["host"] = p.host;
  j["cpu"] = p.cpu;
  j["gpu"] = p.gpu;
  j["gloo"] = p.gloo;
  j["tcp_congestion"] = p.tcp_congestion;
  j["nccl"] = p.nccl;
  j["cuda"] = p.cuda;
  return j;
}

}  // namespace ddp::results
