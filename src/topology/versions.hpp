#pragma once
// Versions of the libraries shakedown runs against (what was loaded, not what was compiled
// against, wherever the library can tell). Recorded per node so a bad mix across nodes shows up.
#include <string>

namespace shakedown {

struct LibraryVersions {
  std::string mpi;           // first line of MPI_Get_library_version
  std::string nccl;          // "2.28.9" | "not built"
  std::string cuda_runtime;  // "13.0" | "not built" | "unavailable (<why>)"
  std::string cuda_driver;   // highest CUDA version the driver supports, "unavailable (...)"
  std::string hdf5;          // "1.10.8"
  std::string ucx;           // "1.13.1"
  std::string hwloc;         // "2.9.0"
  std::string openblas;      // "0.3.21 (DYNAMIC_ARCH ... )"
  bool cuda_built = false;   // SHAKEDOWN_HAVE_CUDA
};

// Safe before MPI_Init and without a GPU or driver: failures become "unavailable (<why>)".
LibraryVersions library_versions();

// Helpers, exposed for tests.
// ncclGetVersion's code: 22809 -> "2.28.9" (>= 2.9 scheme), 2708 -> "2.7.8" (older scheme).
std::string nccl_version_string(int code);
// cudaRuntimeGetVersion / cudaDriverGetVersion code: 13000 -> "13.0", 12080 -> "12.8".
std::string cuda_version_string(int code);
// openblas_get_config() text "OpenBLAS 0.3.21 DYNAMIC_ARCH Zen MAX_THREADS=64"
// -> "0.3.21 (DYNAMIC_ARCH Zen MAX_THREADS=64)".
std::string openblas_version_string(const std::string& config);

}  // namespace shakedown
