#include "core/testing/gpu.h"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/launch/share_gpu.h"

namespace ddp::testing {
namespace {

// Asks CUDA in a throwaway child: CUDA initialised in this process would not
// survive the fork()s with which the tests start their ranks.
int ProbeInChild(std::string* reason) {
  int fds[2];
  if (pipe(fds) != 0) {
    *reason = "pipe() failed";
    return 0;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *reason = "fork() failed";
    return 0;
  }
  if (pid == 0) {
    close(fds[0]);
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    char msg[256];
    std::snprintf(msg, sizeof msg, "%d %s", err == cudaSuccess ? count : -1,
                  err == cudaSuccess ? "" : cudaGetErrorString(err));
    const ssize_t n = write(fds[1], msg, std::strlen(msg));
    _exit(n > 0 ? 0 : 1);
  }
  close(fds[1]);
  char buf[256] = {};
  ssize_t total = 0;
  for (ssize_t n; (n = read(fds[0], buf + total, sizeof buf - 1 - total)) > 0;) total += n;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  int count = -1;
  char text[256] = {};
  if (std::sscanf(buf, "%d %255[^\n]", &count, text) < 1) {
    *reason = "the CUDA probe process died";
    return 0;
  }
  if (count < 0) {
    *reason = std::string("cudaGetDeviceCount: ") + text;
    return 0;
  }
  if (count == 0) *reason = "cudaGetDeviceCount returned 0 devices";
  return count;
}

}  // namespace

int VisibleGpus(std::string* reason) {
  // Probed once per process: after a test has used CUDA here, a child forked
  // for a second probe could not use CUDA and would wrongly report no GPU.
  static std::string cached_reason;
  static const int count = ProbeInChild(&cached_reason);
  *reason = cached_reason;
  // Printed so the test log says why, even when the summary only says PASSED.
  if (count == 0) std::fprintf(stderr, "[gpu] %s\n", reason->c_str());
  return count;
}

bool GpuRequired() {
  const char* v = std::getenv("DDP_PITFALLS_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

bool RanksShareGpu(int ranks) {
  std::string reason;
  const int gpus = VisibleGpus(&reason);
  if (gpus == 0) return false;
  return launch::DecideShareGpu("nccl", /*requested=*/false, ranks, gpus).share;
}

}  // namespace ddp::testing
