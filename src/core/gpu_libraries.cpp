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

// Opens the library and resolves every member of Table (`resolve` names the first missing
// function, "" when none), or says why not.
template <class Table, class Resolve>
std::variant<Table, std::string> load(const std::string& what, const std::string& soname,
                                      const std::string& folder, const std::string& fix,
                                      Resolve&& resolve) {
  Table t;
  t.handle = DynamicLibrary::open_first(candidates(soname, folder));
  if (!t.handle.loaded()) {
    return "cannot load " + what + " (" + t.handle.error() + "): " + fix;
  }
  if (const std::string missing = resolve(t); !missing.empty()) {
    return what + " (" + t.handle.name() + ") lacks " + missing +
           ": it is older than the headers shakedown was built with; " + fix;
  }
  return t;
}

template <class Table>
const Table& table_or_throw(const std::variant<Table, std::string>& loaded) {
  if (const auto* why = std::get_if<std::string>(&loaded)) throw RuntimeFault(*why);
  return std::get<Table>(loaded);
}

// One member of a table from its symbol, prefix + name; returns the symbol when it is missing.
#define SD_RESOLVE(prefix, name)                              \
  t.name = t.handle.function<decltype(t.name)>(prefix #name); \
  if (t.name == nullptr) return prefix #name;
#define SD_RESOLVE_NCCL(name) SD_RESOLVE("nccl", name)
#define SD_RESOLVE_CUBLASLT(name) SD_RESOLVE("cublasLt", name)

}  // namespace

std::string nccl_soname() {
  return "libnccl.so." + std::to_string(NCCL_MAJOR);
}

std::string cublaslt_soname() {
  return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
}

std::variant<NcclLibrary, std::string> load_nccl(const std::string& soname,
                                                 const std::string& folder) {
  return load<NcclLibrary>(
      "NCCL", soname, folder,
      "install NCCL " + std::to_string(NCCL_MAJOR) +
          " or add its folder to LD_LIBRARY_PATH, or set collectives.backend: mpi",
      [](NcclLibrary& t) -> std::string {
        SD_NCCL_FUNCTIONS(SD_RESOLVE_NCCL)
        return "";
      });
}

std::variant<CublasLtLibrary, std::string> load_cublaslt(const std::string& soname,
                                                         const std::string& folder) {
  return load<CublasLtLibrary>(
      "cuBLASLt", soname, folder,
      "install cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
          " (the CUDA toolkit's libcublasLt) or add its folder to LD_LIBRARY_PATH, or set "
          "gemm.engine: cpu",
      [](CublasLtLibrary& t) -> std::string {
        SD_CUBLASLT_FUNCTIONS(SD_RESOLVE_CUBLASLT)
        return "";
      });
}

#undef SD_RESOLVE_CUBLASLT
#undef SD_RESOLVE_NCCL
#undef SD_RESOLVE

const NcclLibrary& nccl_api() {
  static const std::variant<NcclLibrary, std::string> loaded =
      load_nccl(nccl_soname(), SHAKEDOWN_NCCL_LIBDIR);
  return table_or_throw(loaded);
}

const CublasLtLibrary& cublaslt_api() {
  static const std::variant<CublasLtLibrary, std::string> loaded =
      load_cublaslt(cublaslt_soname(), SHAKEDOWN_CUDA_LIBDIR);
  return table_or_throw(loaded);
}

}  // namespace shakedown

#endif  // SHAKEDOWN_HAVE_CUDA
