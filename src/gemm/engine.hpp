#pragma once
// GemmEngine (docs/architecture.md "Layers"): D = (A * a.scale_inv) x (B * b.scale_inv)^T with FP8
// A and B, fp32 accumulation and a bf16 or fp32 D. Shapes follow a Linear layer (y = x W^T):
//   A: [m, k] row-major (activations), B: [n, k] row-major (weights), D: [m, n] row-major.
// In cuBLASLt's column-major terms this is exactly the TN layout it requires for FP8: cuBLASLt's
// "A" is our B (transposed, ld = k), its "B" is our A (not transposed, ld = k), D is n x m, ld = n.
// The CPU engine (OpenBLAS) is the numerical reference the cuBLASLt engine is checked against.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fp8/tensor.hpp"

namespace shakedown {

enum class GemmOut : std::uint8_t { kBF16, kFP32 };
GemmOut parse_gemm_out(const std::string& text);  // "bf16" | "fp32"
const char* gemm_out_name(GemmOut out);

struct GemmOptions {
  GemmOut out = GemmOut::kBF16;
  bool fast_accum = true;  // cuBLASLt FAST_ACCUM (forward GEMMs); the CPU engine ignores it
};

// The output as stored by the engine, brought back to the host.
struct GemmOutput {
  std::int64_t rows = 0;  // m
  std::int64_t cols = 0;  // n
  GemmOut type = GemmOut::kBF16;
  std::vector<float> values;  // [m, n] row-major: the stored bf16/fp32 values, widened exactly
  float amax = 0.0f;          // max |D| as the engine computed it (cuBLASLt AMAX_D; CPU pass)
};

// One prepared problem: operands resident where the engine computes, D allocated. run() may be
// called many times (the timed loop); it returns when D is complete (GPU: stream synchronised),
// allocates nothing and logs nothing.
class GemmProblem {
 public:
  virtual ~GemmProblem() = default;
  GemmProblem() = default;
  GemmProblem(const GemmProblem&) = delete;
  GemmProblem& operator=(const GemmProblem&) = delete;

  virtual void run() = 0;
  virtual GemmOutput result() = 0;
  // Only the given rows of D (in that order): rows = rows.size(), values [rows.size(), n]; amax
  // over those rows. For checking a sample of a large D without bringing all of it back. The
  // default extracts them from result().
  virtual GemmOutput result_rows(const std::vector<std::int64_t>& rows);
  // output_hash (gemm/output_hash.hpp) of D's stored bits, row-major [m, n], computed where D
  // lives: equal outputs hash equal on any engine, and one flipped bit always changes the hash.
  virtual std::uint64_t output_hash() = 0;
  // Flips bit `bit` of D's stored element `index` (the --inject sdc fault), in place.
  virtual void flip_output_bit(std::int64_t index, int bit) = 0;
};

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  GemmEngine() = default;
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;

  virtual std::string name() const = 0;  // "cpu" | "cublaslt"
  // Library and version (and device) that produced the numbers: ranks only compare output hashes
  // within one such group, since a different library or GPU legitimately changes bits.
  virtual std::string implementation() const = 0;
  // Unit roundoff of the accumulation, for the error bound (gemm/reference.hpp): 2^-24 for fp32
  // accumulation. Engines with a less precise accumulator (Hopper FP8 fast accumulation) say so.
  virtual double accumulation_roundoff(const GemmOptions& options) const {
    (void)options;
    return 0x1p-24;
  }
  // Checks shapes and formats (check_gemm_operands plus engine rules, e.g. cuBLASLt's leading
  // dimensions), uploads the operands and allocates D. Throws UsageError naming the shape and
  // types when the engine cannot run it, OutOfMemory when memory runs out.
  virtual std::unique_ptr<GemmProblem> prepare(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                                               const GemmOptions& options) = 0;

  // prepare + run + result, for tests and one-off products.
  GemmOutput run(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, const GemmOptions& options);
};

// Rules every engine shares: A is [m, k], B is [n, k] with the same k, both non-empty, data sizes
// match, and not E5M2 x E5M2 (cuBLASLt has no such kernel; TE never asks for one).
void check_gemm_operands(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b);
// "m x n x k, A e4m3, B e5m2 -> bf16", for messages.
std::string describe_gemm(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, GemmOut out);

// OpenBLAS: decode through the 256-entry table with scale_inv folded in, then cblas_sgemm with
// fp32 accumulation. threads: 0 = OpenBLAS's default.
std::unique_ptr<GemmEngine> make_cpu_gemm_engine(int threads);

// cuBLASLt on the current CUDA device. Throws UsageError when this build has no CUDA or no GPU
// is visible (saying which).
std::unique_ptr<GemmEngine> make_cublaslt_gemm_engine();

}  // namespace shakedown
