#pragma once
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPU model when it loads.
// A model newer than the library falls back to its Prescott (SSE3) kernels: Debian 12's 0.3.21 on
// an Emerald Rapids VM (family 6, model 207) runs SGEMM 5-10x below the AVX-512 kernels the CPU
// has, so a CPU GEMM would fail gemm.tflops and name a healthy node. shakedown then starts itself
// again, before MPI starts, with OPENBLAS_CORETYPE naming the kernels the CPU's features
// allow, and says so in the engine's description. A user's own OPENBLAS_CORETYPE is never
// overridden.
#include <string>
#include <string_view>

namespace shakedown {

// What the CPU (and its OS) can run, as OpenBLAS's x86-64 kernels need it.
struct CpuVectorFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512cd = false;
};
CpuVectorFeatures cpu_vector_features();

// The OPENBLAS_CORETYPE to ask for when OpenBLAS picked `picked` (openblas_get_corename()) on a
// CPU with `cpu`: "SkylakeX" (AVX-512) or "Haswell" (AVX2 + FMA) when it took its Prescott
// fallback on a CPU that has either; "" when its choice stands.
std::string better_blas_core(std::string_view picked, const CpuVectorFeatures& cpu);

// Called by `run` before MPI starts: when OpenBLAS took its fallback, OPENBLAS_CORETYPE is unset
// and this process has not been started again for it already, sets it (and SHAKEDOWN_BLAS_FALLBACK
// to what OpenBLAS had picked) and execs this executable (its path from /proc/self/exe) with the
// same arguments. Returns when nothing is to be done, or when the exec fails (then the
// environment is as it was).
void restart_for_blas_kernels(char** argv);

// "" normally; else a note for the engine's description: which kernels shakedown asked for and
// why (from the environment restart_for_blas_kernels left).
std::string blas_kernels_note();

// "" unless OpenBLAS runs its fallback `picked` on a CPU with better kernels and shakedown did not
// set them (the user's OPENBLAS_CORETYPE asks for the fallback, or the restart failed): then what
// to set, for the engine's description, so a slow CPU GEMM says why.
std::string blas_fallback_advice(std::string_view picked, const CpuVectorFeatures& cpu);

}  // namespace shakedown
