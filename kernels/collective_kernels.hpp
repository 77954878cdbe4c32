#pragma once
// Device-side pattern fill, verification and corruption for the collectives phase, callable from
// plain C++ (no CUDA types here: a cudaStream_t travels as void*). The formulas are the ones in
// comm/pattern_math.hpp, so the device verify and the host reference (comm/pattern.hpp) agree
// element for element. Only built with CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cstdint>

#include "comm/collectives.hpp"
#include "comm/dtype.hpp"
#include "comm/pattern.hpp"

namespace shakedown::kernels {

// Writes this rank's input pattern for `kind` (as fill_input does): counts.send elements of
// spec.dtype at `dev` (device memory, the current device). Asynchronous on `stream` (a
// cudaStream_t; nullptr = legacy default). Throws RuntimeFault when the launch fails.
void launch_fill(void* dev, CollectiveKind kind, const CollectiveCounts& counts,
                 const PatternSpec& spec, int rank, void* stream);

// Compares counts.recv elements at `dev` with the expected output of `kind` for this rank.
// Synchronous: waits for `stream` (so for the collective enqueued before it) and returns the
// number of wrong elements, the first wrong index and the expected/got values there. Uses a few
// bytes of stream-ordered device scratch.
VerifyResult run_verify(const void* dev, CollectiveKind kind, const CollectiveCounts& counts,
                        const PatternSpec& spec, int rank, void* stream);

// Changes element `index` of `dev` to a different value exact in `dtype` (corrupted_value), so
// the verify after it must report exactly that element. Asynchronous on `stream`.
void launch_corrupt(void* dev, DType dtype, std::uint64_t index, void* stream);

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
