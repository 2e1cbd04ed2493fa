// Can this machine's NVIDIA driver run the CUDA runtime a binary carries?
// The runtime is linked statically (CUDA 13.0 here), so the answer depends
// on the build machine's toolkit, not on what the target has installed; a
// driver too old for it fails every CUDA call with
// cudaErrorInsufficientDriver, deep inside each test. The doctor and the
// bundle's run_all.sh say it once, first.
#pragma once

#include <string>

namespace ddp::env {

// The oldest driver branch that runs a CUDA major version's runtime (minor
// version compatibility holds within a major; NVIDIA's CUDA compatibility
// guide): 11 -> 450, 12 -> 525, 13 -> 580; 0 when unknown.
int MinDriverBranch(int cuda_major);

// "" when the driver can run `runtime` ("13.0"), else one line:
//   "this binary's CUDA 13.0 runtime needs driver >= 580; this machine has
//    535.104.05: rebuild with CUDA_PATH pointing at a CUDA 12 toolkit".
// driver_release: the kernel module's version ("535.104.05"), "" if unknown;
// driver_cuda: the newest CUDA the driver supports ("12.2", from
// cudaDriverGetVersion), used when the release is unknown. Nothing known
// (no driver at all) is not this check's problem: "".
std::string DriverProblem(const std::string& runtime, const std::string& driver_release,
                          const std::string& driver_cuda);

// The loaded kernel module's version from /proc/driver/nvidia/version
// ("580.159.04"), "" when there is none (or `path` is unreadable).
std::string NvidiaDriverRelease(const std::string& path = "/proc/driver/nvidia/version");

}  // namespace ddp::env
