#pragma once
// The NCCL check macro (one per library), and SD_CUDA_CHECK from core/cuda_check.hpp.
// Throws with the failing expression, file:line and NCCL's own error string (plus its last-error
// detail); device memory exhaustion becomes shakedown::OutOfMemory.
#if SHAKEDOWN_HAVE_CUDA

#include <nccl.h>

#include <cctype>
#include <string>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/gpu_libraries.hpp"

namespace shakedown::detail {

[[noreturn]] inline void throw_nccl_error(ncclResult_t rc, const char* expr, const char* file,
                                          int line) {
  std::string message = std::string("NCCL error in ") + expr + " at " + file + ":" +
                        std::to_string(line) + ": " + nccl_api().GetErrorString(rc);
  // The last error's detail (e.g. which peer or transport failed). The communicator argument is
  // unused by NCCL (it keeps the message per thread), so no handle is needed here.
  const char* last = nccl_api().GetLastError(nullptr);
  const std::string detail = last != nullptr ? last : "";
  if (!detail.empty()) message += " (" + detail + ")";
  // Which CUDA error it was is in NCCL's own text only: libnccl has its own CUDA runtime (and
  // allocates through the driver API), so this program's cudaGetLastError() never sees it.
  if (rc == ncclUnhandledCudaError) {
    std::string lower = detail;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("out of memory") != std::string::npos ||
        lower.find("out_of_memory") != std::string::npos) {
      throw OutOfMemory(message + ": out of device memory");
    }
  }
  if (rc == ncclRemoteError || rc == ncclSystemError)
    message += " (a peer or the network failed; NCCL_DEBUG=INFO shows which)";
  throw RuntimeFault(message);
}

inline void nccl_check(ncclResult_t rc, const char* expr, const char* file, int line) {
  if (rc != ncclSuccess) throw_nccl_error(rc, expr, file, line);
}

}  // namespace shakedown::detail

// Throws shakedown::RuntimeFault: "NCCL error in <expr> at file:line: <ncclGetErrorString>
// (<ncclGetLastError>)".
#define SD_NCCL_CHECK(expr) ::shakedown::detail::nccl_check((expr), #expr, __FILE__, __LINE__)

#endif  // SHAKEDOWN_HAVE_CUDA
