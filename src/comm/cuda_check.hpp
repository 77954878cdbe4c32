#pragma once
// The CUDA and NCCL check macros (DESIGN.md: one per library). Each throws with the failing
// expression, file:line and the library's own error string. Device memory exhaustion becomes
// shakedown::OutOfMemory so the collectives sweep can record the size as skipped and go on.
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "comm/comm.hpp"
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

[[noreturn]] inline void throw_nccl_error(ncclResult_t rc, const char* expr, const char* file,
                                          int line) {
  std::string message = std::string("NCCL error in ") + expr + " at " + file + ":" +
                        std::to_string(line) + ": " + ncclGetErrorString(rc);
  // The last error's detail (e.g. which peer or transport failed). The communicator argument is
  // unused by NCCL (it keeps the message per thread), so no handle is needed here.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  if (rc == ncclUnhandledCudaError) {
    const cudaError_t cuda = cudaGetLastError();
    if (cuda == cudaErrorMemoryAllocation) throw OutOfMemory(message + ": out of device memory");
    if (cuda != cudaSuccess) message += std::string(": CUDA ") + cudaGetErrorString(cuda);
  }
  if (rc == ncclRemoteError || rc == ncclSystemError)
    message += " (a peer or the network failed; NCCL_DEBUG=INFO shows which)";
  throw RuntimeFault(message);
}

inline void nccl_check(ncclResult_t rc, const char* expr, const char* file, int line) {
  if (rc != ncclSuccess) throw_nccl_error(rc, expr, file, line);
}

}  // namespace shakedown::detail

// Throws shakedown::RuntimeFault (shakedown::OutOfMemory for cudaErrorMemoryAllocation):
// "CUDA error in <expr> at file:line: <name>: <cudaGetErrorString>".
#define SD_CUDA_CHECK(expr) ::shakedown::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
// Throws shakedown::RuntimeFault: "NCCL error in <expr> at file:line: <ncclGetErrorString>
// (<ncclGetLastError>)".
#define SD_NCCL_CHECK(expr) ::shakedown::detail::nccl_check((expr), #expr, __FILE__, __LINE__)

#endif  // SHAKEDOWN_HAVE_CUDA
