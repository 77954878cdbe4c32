#pragma once
// Validation patterns (the nccl-tests idea, own formulas): every input element is an integer
// computed from (seed, rank, index), small enough that any reduction order gives the exact same
// result in every dtype, so the expected output is computed from the seed alone - never by a
// second collective - and compared bit-exact. The formulas are header-only and usable from CUDA
// (SD_HOST_DEVICE) so the device verify kernel and the host reference are the same code.
#include <cstdint>

#include "comm/collectives.hpp"
#include "comm/dtype.hpp"

#if defined(__CUDACC__)
#define SD_HOST_DEVICE __host__ __device__
#define SD_INLINE  // nvcc inlines these device functions itself
#else
#define SD_HOST_DEVICE
// The per-element formulas are inlined into the host's fill and verify loops: called out of
// line, their per-buffer work is redone for every element (a fill ran at 4.7 ns per element).
#define SD_INLINE [[gnu::always_inline]]
#endif

namespace shakedown {

struct PatternSpec {
  std::uint64_t seed = 1;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int nranks = 1;
  int root = 0;  // broadcast root
  // Reducing collectives need small values whose sums stay exact in the dtype; the others use
  // the dtype's whole exact integer range. Set from the collective by pattern_spec_for(kind, s)
  // (pattern_math.hpp); fill_input, verify_output and expected_output do that themselves.
  bool reduces = true;
};

// What a rank's output should hold, how far it was from that, and where it first went wrong.
struct VerifyResult {
  std::uint64_t wrong = 0;        // elements that differ
  std::int64_t first_wrong = -1;  // index of the first one, -1 none
  double expected = 0;            // at first_wrong
  double got = 0;                 // at first_wrong
};

// Host reference: fill this rank's input, and check its output, for collective `kind`.
// `counts` from the collective table. Buffers hold `counts.send` / `counts.recv` elements of
// spec.dtype. send_recv: rank r sends to r+1 and receives from r-1 (mod n). Input element i holds
// the same value whatever counts.send is, so a buffer filled for a larger count is filled for
// every smaller one. `threads` > 1 splits large buffers (from 2^18 elements per thread) into
// that many ranges, one thread each; the result is the same for any thread count.
void fill_input(void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                const PatternSpec& spec, int rank, int threads = 1);
VerifyResult verify_output(const void* buffer, CollectiveKind kind, const CollectiveCounts& counts,
                           const PatternSpec& spec, int rank, int threads = 1);

}  // namespace shakedown
