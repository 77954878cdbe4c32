#include "gemm/blas_kernels.hpp"

#include <unistd.h>

#include <strings.h>
#include <cstdlib>

extern "C" char* openblas_get_corename(void);

namespace shakedown {

namespace {

constexpr const char* kCoreType = "OPENBLAS_CORETYPE";
constexpr const char* kFallback = "SHAKEDOWN_BLAS_FALLBACK";  // what OpenBLAS had picked

}  // namespace

CpuVectorFeatures cpu_vector_features() {
  CpuVectorFeatures f;
#if defined(__x86_64__)
  // libgcc checks the OS's XSAVE support (XGETBV) as well as CPUID.
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") != 0;
  f.fma = __builtin_cpu_supports("fma") != 0;
  f.avx512f = __builtin_cpu_supports("avx512f") != 0;
  f.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
  f.avx512dq = __builtin_cpu_supports("avx512dq") != 0;
  f.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
  f.avx512cd = __builtin_cpu_supports("avx512cd") != 0;
#endif
  return f;
}

std::string better_blas_core(std::string_view picked, const CpuVectorFeatures& cpu) {
  if (picked.size() != 8 || strncasecmp(picked.data(), "prescott", 8) != 0) return "";
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl && cpu.avx512cd) {
    return "SkylakeX";
  }
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return "";
}

void restart_for_blas_kernels(char** argv) {
  if (std::getenv(kCoreType) != nullptr || std::getenv(kFallback) != nullptr) return;
  const char* picked = openblas_get_corename();
  if (picked == nullptr) return;
  const std::string core = better_blas_core(picked, cpu_vector_features());
  if (core.empty()) return;
  const std::string was = picked;
  if (setenv(kCoreType, core.c_str(), 1) != 0) return;
  if (setenv(kFallback, was.c_str(), 1) != 0) {
    unsetenv(kCoreType);
    return;
  }
  // The executable's own path, not /proc/self/exe: the process's name (ps, pgrep, top) is the
  // file name exec'd.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  unsetenv(kCoreType);  // the exec failed: go on with OpenBLAS's own choice
  unsetenv(kFallback);
}

std::string blas_kernels_note() {
  const char* was = std::getenv(kFallback);
  const char* core = std::getenv(kCoreType);
  if (was == nullptr || core == nullptr) return "";
  return std::string(kCoreType) + "=" + core + " set by shakedown: OpenBLAS took its " + was +
         " fallback for this CPU model";
}

std::string blas_fallback_advice(std::string_view picked, const CpuVectorFeatures& cpu) {
  const std::string better = better_blas_core(picked, cpu);
  if (better.empty()) return "";
  return std::string("OpenBLAS's ") + std::string(picked) + " fallback, slow on this CPU: set " +
         kCoreType + "=" + better + " (or unset it and shakedown sets it)";
}

}  // namespace shakedown
