#pragma once
// The CUDA runtime check macro (one per library), shared by every folder that calls
// CUDA (comm/, gemm/, kernels/). Throws with the failing expression, file:line and CUDA's own
// error string; device memory exhaustion becomes shakedown::OutOfMemory so sweeps can record a
// size as skipped and go on. Header-only: core/ itself does not link CUDA.
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace shakedown::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t rc, const char* expr, const char* file,
                                          int line) {
  // Non-sticky errors (an allocation that failed, a bad argument) stay latched in the runtime
  // until read; clear them so the next, unrelated CUDA call does not report them again.
  (void)cudaGetLastError();
  std::string message = std::string("CUDA error in ") + expr + " at " + file + ":" +
                        std::to_string(line) + ": " + cudaGetErrorName(rc) + ": " +
                        cudaGetErrorString(rc);
  if (rc == cudaErrorMemoryAllocation) throw OutOfMemory(message);
  if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver)
    message += " (is the NVIDIA driver loaded and the GPU visible? check nvidia-smi)";
  throw RuntimeFault(message);
}

inline void cuda_check(cudaError_t rc, const char* expr, const char* file, int line) {
  if (rc != cudaSuccess) throw_cuda_error(rc, expr, file, line);
}

}  // namespace shakedown::detail

// Throws shakedown::RuntimeFault (shakedown::OutOfMemory for cudaErrorMemoryAllocation):
// "CUDA error in <expr> at file:line: <name>: <cudaGetErrorString>".
#define SD_CUDA_CHECK(expr) ::shakedown::detail::cuda_check((expr), #expr, __FILE__, __LINE__)

#endif  // SHAKEDOWN_HAVE_CUDA
