#include "topology/versions.hpp"

#include <H5public.h>
#include <hwloc.h>
#include <mpi.h>

#include <chrono>
#include <functional>
#include <sstream>

#include "core/dynamic_library.hpp"
#include "core/error.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/gpu_libraries.hpp"
#endif

// OpenBLAS's own entry point. Declared here rather than taken from cblas.h, because on Debian
// cblas.h is an alternative that may point at the netlib header, which does not declare it.
extern "C" char* openblas_get_config(void);

namespace shakedown {

std::string nccl_version_string(int code) {
  if (code <= 0) return "unavailable (ncclGetVersion returned " + std::to_string(code) + ")";
  // NCCL 2.9 changed NCCL_VERSION_CODE from X*1000+Y*100+Z to X*10000+Y*100+Z.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

std::string openblas_version_string(const std::string& config) {
  std::istringstream in(config);
  std::string word, version, rest;
  in >> word;
  if (word != "OpenBLAS" || !(in >> version)) return config.empty() ? "unavailable" : config;
  std::getline(in >> std::ws, rest);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\n')) rest.pop_back();
  return rest.empty() ? version : version + " (" + rest + ")";
}

namespace {

std::string mpi_version() {
  // MPI_Get_library_version is one of the few calls the standard allows before MPI_Init.
  char buffer[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(buffer, &length) != MPI_SUCCESS) {
    return "unavailable (MPI_Get_library_version failed)";
  }
  std::string text(buffer, static_cast<std::size_t>(length > 0 ? length : 0));
  // "Open MPI v4.1.4, package: Debian OpenMPI, ident: ...": the first clause names the version.
  const auto end = text.find_first_of("\n,");
  if (end != std::string::npos) text.resize(end);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
  return text;
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0)
    return "unavailable (H5get_libversion failed)";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

std::string hwloc_version() {
  // hwloc only reports its API version at run time (2.9 still has API 2.8.0). When the loaded
  // library's API matches the headers, the header's release number names it; otherwise say
  // which API was loaded rather than guess.
  const unsigned api = hwloc_get_api_version();
  if (api == HWLOC_API_VERSION) return HWLOC_VERSION;
  return "API " + std::to_string(api >> 16) + "." + std::to_string((api >> 8) & 0xffu) + "." +
         std::to_string(api & 0xffu) + " (built against " HWLOC_VERSION ")";
}

// `ask` in this process when it has loaded `soname` already; otherwise in a child process, so
// that this one maps nothing it does not use: --version and the inventory of a CPU run stay
// free of NCCL and the driver (docs/architecture.md "GPU libraries"), and UCX, whose libucs
// constructors can abort the process (a 64-character host name overflows its log buffer), can
// take down only the child. Open MPI's UCX transport loads UCX during MPI_Init, a GPU run NCCL
// and the driver.
std::string ask_in_process_if_loaded(const std::string& soname,
                                     const std::function<std::string()>& ask) {
  if (DynamicLibrary::if_loaded(soname).loaded()) return ask();
  const ChildProbe probe = probe_in_child(ask, std::chrono::seconds(10));
  return probe.ok ? probe.text : "unavailable (loading " + soname + " " + probe.text + ")";
}

std::string ucx_version() {
  constexpr const char* kLibrary = "libucp.so.0";
  using VersionFn = const char* (*)();
  return ask_in_process_if_loaded(kLibrary, [] {
    DynamicLibrary lib = DynamicLibrary::open(kLibrary);
    if (!lib.loaded()) return "unavailable (" + lib.error() + ")";
    auto fn = lib.function<VersionFn>("ucp_get_version_string");
    if (fn == nullptr) return "unavailable (" + lib.error() + ")";
    const char* text = fn();
    return text != nullptr ? std::string(text)
                           : std::string("unavailable (ucp_get_version_string returned null)");
  });
}

#if SHAKEDOWN_HAVE_CUDA
std::string nccl_version() {
  return ask_in_process_if_loaded(nccl_soname(), []() -> std::string {
    try {
      int code = 0;
      const ncclResult_t rc = nccl_api().GetVersion(&code);
      return rc == ncclSuccess
                 ? nccl_version_string(code)
                 : "unavailable (ncclGetVersion: " + std::string(nccl_api().GetErrorString(rc)) +
                       ")";
    } catch (const Error& e) {
      return "unavailable (" + std::string(e.what()) + ")";
    }
  });
}

// The CUDA runtime is linked statically; asking it for the driver's version opens libcuda.
std::string cuda_driver_version() {
  return ask_in_process_if_loaded("libcuda.so.1", []() -> std::string {
    int driver = 0;
    const cudaError_t rc = cudaDriverGetVersion(&driver);
    if (rc != cudaSuccess) return std::string("unavailable (") + cudaGetErrorString(rc) + ")";
    // Without a driver cudaDriverGetVersion succeeds and reports 0.
    if (driver == 0) return "unavailable (no NVIDIA driver installed)";
    return cuda_version_string(driver);
  });
}
#endif

}  // namespace

LibraryVersions library_versions() {
  LibraryVersions v;
  v.mpi = mpi_version();
  v.hdf5 = hdf5_version();
  v.ucx = ucx_version();
  v.hwloc = hwloc_version();
  const char* blas = openblas_get_config();
  v.openblas = openblas_version_string(blas != nullptr ? blas : "");
#if SHAKEDOWN_HAVE_CUDA
  v.cuda_built = true;
  v.nccl = nccl_version();
  // The runtime is linked statically: its version is known without loading anything.
  int runtime = 0;
  const cudaError_t rt_rc = cudaRuntimeGetVersion(&runtime);
  v.cuda_runtime = rt_rc == cudaSuccess
                       ? cuda_version_string(runtime)
                       : std::string("unavailable (") + cudaGetErrorString(rt_rc) + ")";
  v.cuda_driver = cuda_driver_version();
#else
  v.cuda_built = false;
  v.nccl = "not built";
  v.cuda_runtime = "not built";
  v.cuda_driver = "not built";
#endif
  return v;
}

}  // namespace shakedown
