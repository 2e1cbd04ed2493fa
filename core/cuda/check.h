// Every CUDA runtime call's status is checked: DDP_CUDA_CHECK(expr) throws
// ddp::cuda::CudaError naming the call, file:line, the error's name and
// cudaGetErrorString. Kernel launches return no status, so each launch is
// followed by DDP_CUDA_CHECK(cudaGetLastError()).
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace ddp::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// The message DDP_CUDA_CHECK throws with; public so tests can pin its format.
inline std::string CudaErrorMessage(cudaError_t code, const char* expr, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " + cudaGetErrorName(code) +
         ": " + cudaGetErrorString(code);
}

inline void ThrowIfCudaError(cudaError_t code, const char* expr, const char* file, int line) {
  if (code != cudaSuccess) throw CudaError(code, CudaErrorMessage(code, expr, file, line));
}

}  // namespace ddp::cuda

#define DDP_CUDA_CHECK(expr) ::ddp::cuda::ThrowIfCudaError((expr), #expr, __FILE__, __LINE__)
