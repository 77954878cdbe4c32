#pragma once
// The cuBLASLt check macro (one per library). Throws with the failing expression,
// file:line and cuBLAS's own status name and description; an allocation failure inside cuBLASLt
// becomes shakedown::OutOfMemory, like SD_CUDA_CHECK's (core/cuda_check.hpp).
#if SHAKEDOWN_HAVE_CUDA

#include <cublasLt.h>

#include <string>

#include "core/error.hpp"
#include "core/gpu_libraries.hpp"

namespace shakedown::detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t rc, const char* expr, const char* file,
                                            int line) {
  const std::string message = std::string("cuBLASLt error in ") + expr + " at " + file + ":" +
                              std::to_string(line) + ": " + cublaslt_api().GetStatusName(rc) +
                              ": " + cublaslt_api().GetStatusString(rc);
  if (rc == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory(message);
  throw RuntimeFault(message);
}

inline void cublas_check(cublasStatus_t rc, const char* expr, const char* file, int line) {
  if (rc != CUBLAS_STATUS_SUCCESS) throw_cublas_error(rc, expr, file, line);
}

}  // namespace shakedown::detail

// Throws shakedown::RuntimeFault (shakedown::OutOfMemory for CUBLAS_STATUS_ALLOC_FAILED):
// "cuBLASLt error in <expr> at file:line: <cublasLtGetStatusName>: <cublasLtGetStatusString>".
#define SD_CUBLAS_CHECK(expr) ::shakedown::detail::cublas_check((expr), #expr, __FILE__, __LINE__)

#endif  // SHAKEDOWN_HAVE_CUDA
