#pragma once
// The GPU libraries that are big or load slowly — NCCL and cuBLASLt — are loaded at first use,
// one small loader per library (docs/architecture.md "GPU libraries"): a CPU run, `summary`,
// `plan` and `--version` never map them (libcublasLt alone adds about 200 MB per process). The
// CUDA runtime is linked statically and opens the driver (libcuda) only at its first call.
//
// Each loader resolves, once per process, the functions shakedown calls, typed from the
// library's own header (decltype), so a call through the table is checked like a direct one.
// A library that cannot be loaded, or lacks a function, throws RuntimeFault naming the library,
// every place tried and what to do; it fails only the phase that needs it.
// Only built with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cublasLt.h>
#include <nccl.h>

#include <string>
#include <variant>

#include "core/dynamic_library.hpp"

namespace shakedown {

// NCCL's functions that shakedown calls, without the "nccl" prefix.
// clang-format off
#define SD_NCCL_FUNCTIONS(X) \
  X(AllGather) \
  X(AllReduce) \
  X(Broadcast) \
  X(CommAbort) \
  X(CommCount) \
  X(CommDestroy) \
  X(CommFinalize) \
  X(CommGetAsyncError) \
  X(CommInitAll) \
  X(CommInitRankConfig) \
  X(CommSplit) \
  X(CommUserRank) \
  X(GetErrorString) \
  X(GetLastError) \
  X(GetUniqueId) \
  X(GetVersion) \
  X(GroupEnd) \
  X(GroupStart) \
  X(Recv) \
  X(ReduceScatter) \
  X(Send)
// clang-format on

// cuBLASLt's functions that shakedown calls, without the "cublasLt" prefix.
// clang-format off
#define SD_CUBLASLT_FUNCTIONS(X) \
  X(Create) \
  X(Destroy) \
  X(GetStatusName) \
  X(GetStatusString) \
  X(GetVersion) \
  X(Matmul) \
  X(MatmulAlgoGetHeuristic) \
  X(MatmulDescCreate) \
  X(MatmulDescDestroy) \
  X(MatmulDescSetAttribute) \
  X(MatmulPreferenceCreate) \
  X(MatmulPreferenceDestroy) \
  X(MatmulPreferenceSetAttribute) \
  X(MatrixLayoutCreate) \
  X(MatrixLayoutDestroy)
// clang-format on

struct NcclLibrary {
#define SD_NCCL_MEMBER(name) decltype(&::nccl##name) name = nullptr;
  SD_NCCL_FUNCTIONS(SD_NCCL_MEMBER)
#undef SD_NCCL_MEMBER
  DynamicLibrary handle;  // handle.name(): the soname or path that loaded
};

struct CublasLtLibrary {
#define SD_CUBLASLT_MEMBER(name) decltype(&::cublasLt##name) name = nullptr;
  SD_CUBLASLT_FUNCTIONS(SD_CUBLASLT_MEMBER)
#undef SD_CUBLASLT_MEMBER
  DynamicLibrary handle;
};

// NCCL, loaded at the first call and kept for the process (thread-safe). Throws RuntimeFault
// ("cannot load NCCL (...)") when it cannot, at every call.
const NcclLibrary& nccl_api();
// cuBLASLt, likewise.
const CublasLtLibrary& cublaslt_api();

// The sonames asked for first ("libnccl.so.2", "libcublasLt.so.13": the headers' major
// versions), then the same names in the folders the build found them in.
std::string nccl_soname();
std::string cublaslt_soname();

// What nccl_api() and cublaslt_api() load once: `soname`, then `folder`/`soname` ("" for none).
// The table, or the message naming the library, every place tried and the setting to use
// instead. For tests of that message; the phases call the accessors above.
std::variant<NcclLibrary, std::string> load_nccl(const std::string& soname,
                                                 const std::string& folder);
std::variant<CublasLtLibrary, std::string> load_cublaslt(const std::string& soname,
                                                         const std::string& folder);

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
