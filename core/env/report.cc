#include "core/env/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <Eigen/Core>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "build_info.h"
#include "core/env/driver_check.h"
#include "cuda_info.h"
#include "gloo/config.h"
#include "gloo/transport/tcp/device.h"

namespace ddp::env {
std::string DriverProblemHere(const GpuProbe& probe) {
  if (!probe.built_with_cuda) return "";
  return DriverProblem(probe.cuda_runtime, NvidiaDriverRelease(), probe.driver);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string GlooVersion() {
  return std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH) + " (Debian " + DDP_DEB_GLOO_VERSION + ")";
}

std::string TcpCongestionControl() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  if (!(in >> name) || name.empty()) return "unknown";
  return name;
}

namespace {

std::string OsRelease() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

// Gloo can run when a TCP device binds on loopback: that is what every
// Gloo rank of the suite does.
std::string GlooStatus() {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    return "yes (TCP on 127.0.0.1)";
  } catch (const std::exception& e) {
    return std::string("no: ") + e.what();
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Report() {
  std::vector<std::pair<std::string, std::string>> r;
  utsname u{};
  uname(&u);
  r.emplace_back("host", u.nodename);
  r.emplace_back("os", OsRelease() + " (" + u.release + " " + u.machine + ")");
  r.emplace_back("cpu", CpuModel() + ", " + std::to_string(std::thread::hardware_concurrency()) +
                            " logical cores");
  r.emplace_back("bazel", DDP_BAZEL_VERSION);
  r.emplace_back("compiler", std::string("g++ ") + __VERSION__ + ", C++ " +
                                 std::to_string(__cplusplus));
  r.emplace_back("eigen", std::to_string(EIGEN_WORLD_VERSION) + "." +
                              std::to_string(EIGEN_MAJOR_VERSION) + "." +
                              std::to_string(EIGEN_MINOR_VERSION) + " (Debian " +
                              DDP_DEB_EIGEN_VERSION + ")");
  r.emplace_back("gloo", GlooVersion());
  r.emplace_back("tcp congestion control", TcpCongestionControl());
  r.emplace_back("googletest", std::string("Debian ") + DDP_DEB_GTEST_VERSION);
  r.emplace_back("benchmark", std::string("Debian ") + DDP_DEB_BENCHMARK_VERSION);

  const GpuProbe g = ProbeGpus();
  if (g.built_with_cuda) {
    r.emplace_back("cuda", std::string(DDP_CUDA_VERSION) + " toolkit at " + DDP_CUDA_ROOT +
                               "; runtime " + g.cuda_runtime + "; driver supports " + g.driver);
    r.emplace_back("nccl", "built against " + g.nccl_header + "; loaded " + g.nccl_runtime);
    const std::string release = NvidiaDriverRelease();
    const std::string problem = DriverProblemHere(g);
    if (release.empty() && g.driver == "none") {
      r.emplace_back("driver", "none");
    } else {
      r.emplace_back("driver", (release.empty() ? "release unknown" : release) + "; " +
                                   (problem.empty() ? "runs the CUDA " + g.cuda_runtime +
                                                          " runtime built in: ok"
                                                    : problem));
    }
  } else {
    r.emplace_back("cuda", "absent at build time: " + std::string(DDP_CUDA_REASON));
    r.emplace_back("nccl", "absent at build time");
  }
  r.emplace_back("gpus", std::to_string(g.gpus.size()) +
                             (g.gpus.empty() ? " (" + g.why_no_gpu + ")" : ""));
  for (std::size_t i = 0; i < g.gpus.size(); ++i) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s, %.1f GiB, sm_%d%d", g.gpus[i].name.c_str(),
                  g.gpus[i].memory_gib, g.gpus[i].sm_major, g.gpus[i].sm_minor);
    r.emplace_back("gpu " + std::to_string(i), buf);
  }
  const std::string gloo = GlooStatus();
  std::string nccl = "no";
  if (!g.built_with_cuda) {
    nccl = "no (built without CUDA)";
  } else if (g.gpus.empty()) {
    nccl = "no (no GPU visible)";
  } else if (g.nccl_runtime.find('.') == std::string::npos) {
    nccl = "no (libnccl.so.2 " + g.nccl_runtime + ")";
  } else {
    nccl = "yes (" + std::to_string(g.gpus.size()) + " GPU(s))";
  }
  r.emplace_back("backend gloo", gloo);
  r.emplace_back("backend nccl", nccl);
  return r;
}

}  // namespace ddp::env
