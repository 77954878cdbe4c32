// Which OpenBLAS kernels shakedown asks for when OpenBLAS took its Prescott fallback (a CPU model
// newer than the library), and that it leaves every other choice alone.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gemm/blas_kernels.hpp"

namespace shakedown {
namespace {

CpuVectorFeatures avx512() {
  CpuVectorFeatures f;
  f.avx2 = f.fma = true;
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512cd = true;
  return f;
}

TEST(BlasKernels, PrescottFallbackOnAvx512GetsSkylakeX) {
  EXPECT_EQ(better_blas_core("Prescott", avx512()), "SkylakeX");
  EXPECT_EQ(better_blas_core("PRESCOTT", avx512()), "SkylakeX");
}

TEST(BlasKernels, PrescottFallbackOnAvx2GetsHaswell) {
  CpuVectorFeatures f = avx512();
  f.avx512bw = false;  // AVX-512 without every part SkylakeX's kernels use
  EXPECT_EQ(better_blas_core("Prescott", f), "Haswell");
  CpuVectorFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  EXPECT_EQ(better_blas_core("Prescott", avx2), "Haswell");
}

TEST(BlasKernels, OpenBlasOwnChoiceStands) {
  // A CPU it knows, or a CPU without AVX2: nothing to ask for.
  for (const char* picked : {"SkylakeX", "Haswell", "Zen", "Cooperlake", "Sandybridge", ""}) {
    EXPECT_EQ(better_blas_core(picked, avx512()), "") << picked;
  }
  CpuVectorFeatures old;
  old.fma = true;
  EXPECT_EQ(better_blas_core("Prescott", old), "");
  EXPECT_EQ(better_blas_core("Prescottish", avx512()), "");
}

// This process: without a restart the note is empty; when the environment says shakedown set
// the kernels, the note says which and why.
TEST(BlasKernels, NoteNamesTheKernelsAndWhy) {
  if (std::getenv("SHAKEDOWN_BLAS_FALLBACK") == nullptr) {
    EXPECT_EQ(blas_kernels_note(), "");
  }
  const char* had = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = had != nullptr ? had : "";
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  setenv("SHAKEDOWN_BLAS_FALLBACK", "Prescott", 1);
  EXPECT_EQ(blas_kernels_note(),
            "OPENBLAS_CORETYPE=SkylakeX set by shakedown: OpenBLAS took its Prescott fallback for "
            "this CPU model");
  unsetenv("SHAKEDOWN_BLAS_FALLBACK");
  if (had != nullptr) {
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
}

// OpenBLAS on its fallback although shakedown did not set the kernels (the user's
// OPENBLAS_CORETYPE asks for it): the engine's description says what to set.
TEST(BlasKernels, FallbackLeftInPlaceSaysWhatToSet) {
  EXPECT_EQ(blas_fallback_advice("Prescott", avx512()),
            "OpenBLAS's Prescott fallback, slow on this CPU: set OPENBLAS_CORETYPE=SkylakeX (or "
            "unset it and shakedown sets it)");
  EXPECT_EQ(blas_fallback_advice("SkylakeX", avx512()), "");
  EXPECT_EQ(blas_fallback_advice("Prescott", CpuVectorFeatures{}), "");
}

}  // namespace
}  // namespace shakedown
