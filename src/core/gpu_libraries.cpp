#include "core/gpu_libraries.hpp"

#if SHAKEDOWN_HAVE_CUDA

#include <cublas_api.h>

#include <utility>
#include <variant>
#include <vector>

#include "core/error.hpp"

// Set by CMakeLists.txt: the folders the build found NCCL and the CUDA libraries in, tried
// after the plain soname (which follows LD_LIBRARY_PATH and the loader's cache).
#ifndef SHAKEDOWN_NCCL_LIBDIR
#define SHAKEDOWN_NCCL_LIBDIR ""
#endif
#ifndef SHAKEDOWN_CUDA_LIBDIR
#define SHAKEDOWN_CUDA_LIBDIR ""
#endif

namespace shakedown {

namespace {

std::vector<std::string> candidates(const std::string& soname, const std::string& folder) {
  std::vector<std::string> out{soname};
  if (!folder.empty()) out.push_back(folder + "/" + soname);
  return out;
}

// Opens the library and resolves every member of Table, or says why not.
template <class Table, class Resolve>
std::variant<Table, std::string> load(const std::string& what, const std::string& soname,
                                      const std::string& folder, const std::string& fix,
                                      Resolve&& resolve) {
  Table t;
  const std::vector<std::string> names = candidates(soname, folder);
  t.handle = DynamicLibrary::open_first(names);
  if (!t.handle.loaded()) {
    return "cannot load " + what + " (" + t.handle.error() + "): " + fix;
  }
  t.loaded_from = t.handle.name();
  if (const std::string missing = resolve(t); !missing.empty()) {
    return what + " (" + soname + ") lacks " + missing +
           ": it is older than the headers shakedown was built with; " + fix;
  }
  return t;
}

}  // namespace

std::string nccl_soname() {
  return "libnccl.so." + std::to_string(NCCL_MAJOR);
}

std::string cublaslt_soname() {
  return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
}

const NcclLibrary& nccl_api() {
  static const std::variant<NcclLibrary, std::string> loaded = load<NcclLibrary>(
      "NCCL", nccl_soname(), SHAKEDOWN_NCCL_LIBDIR,
      "install NCCL " + std::to_string(NCCL_MAJOR) +
          " or add its folder to LD_LIBRARY_PATH, or set collectives.backend: mpi",
      [](NcclLibrary& t) -> std::string {
#define SD_NCCL_RESOLVE(name)                                 \
  t.name = t.handle.function<decltype(t.name)>("nccl" #name); \
  if (t.name == nullptr) return "nccl" #name;
        SD_NCCL_FUNCTIONS(SD_NCCL_RESOLVE)
#undef SD_NCCL_RESOLVE
        return "";
      });
  if (const auto* why = std::get_if<std::string>(&loaded)) throw RuntimeFault(*why);
  return std::get<NcclLibrary>(loaded);
}

const CublasLtLibrary& cublaslt_api() {
  static const std::variant<CublasLtLibrary, std::string> loaded = load<CublasLtLibrary>(
      "cuBLASLt", cublaslt_soname(), SHAKEDOWN_CUDA_LIBDIR,
      "install cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
          " (the CUDA toolkit's libcublasLt) or add its folder to LD_LIBRARY_PATH, or set "
          "gemm.engine: cpu",
      [](CublasLtLibrary& t) -> std::string {
#define SD_CUBLASLT_RESOLVE(name)                                 \
  t.name = t.handle.function<decltype(t.name)>("cublasLt" #name); \
  if (t.name == nullptr) return "cublasLt" #name;
        SD_CUBLASLT_FUNCTIONS(SD_CUBLASLT_RESOLVE)
#undef SD_CUBLASLT_RESOLVE
        return "";
      });
  if (const auto* why = std::get_if<std::string>(&loaded)) throw RuntimeFault(*why);
  return std::get<CublasLtLibrary>(loaded);
}

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
