// Built where CUDA was found: asks the runtime and driver what is visible.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include "core/env/report.h"

namespace ddp::env {
namespace {

std::string CudaVersionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string NcclVersionString(int code) {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
         std::to_string(code % 100);
}

// dlopen so that a machine without libnccl still gets a report.
std::string LoadedNcclVersion() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::string("not loadable (") + dlerror() + ")";
  using GetVersion = ncclResult_t (*)(int*);
  auto fn = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
  int code = 0;
  const std::string v = (fn != nullptr && fn(&code) == ncclSuccess) ? NcclVersionString(code)
                                                                    : "ncclGetVersion failed";
  return v;
}

}  // namespace

GpuProbe ProbeGpus() {
  GpuProbe p;
  p.built_with_cuda = true;
  p.nccl_header = NcclVersionString(NCCL_VERSION_CODE);
  p.nccl_runtime = LoadedNcclVersion();
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) p.cuda_runtime = CudaVersionString(v);
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) {
    p.driver = CudaVersionString(v);
  } else {
    p.driver = "none";
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    p.why_no_gpu = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return p;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    p.gpus.push_back({prop.name, prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor});
  }
  if (p.gpus.empty()) p.why_no_gpu = "no CUDA device visible";
  return p;
}

}  // namespace ddp::env
