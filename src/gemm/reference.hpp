#pragma once
// The numerical check of a GEMM result against an fp64 reference of the dequantised inputs
// (OpenBLAS DGEMM over the checked rows: the inputs are exact in double, so the reference is
// accurate far beyond what is checked).
//
// The stated bound, per element (i, j):
//   |D_ij - R_ij| <= u_out |R_ij| + (1 + u_out) c_k ||a_i||_2 ||b_j||_2
// u_out is the output's unit roundoff (bf16 2^-8, fp32 2^-24). The second term bounds the
// accumulation error, using |A||B|^T <= ||a_i|| ||b_j|| (Cauchy-Schwarz) to stay O(mk + nk):
//   c_k = gamma_{k+2}(u) = (k+2)u / (1 - (k+2)u)   when (k+2)u <= 0.01 (the rigorous worst case;
//                                                  +2 covers rounding the scaled inputs), else
//   c_k = 8 sqrt(k+2) u                           (Higham & Mary's probabilistic bound with
//                                                  lambda = 8: exceeded with probability below
//                                                  1e-13 per element).
// u is the engine's accumulation unit roundoff (GemmEngine::accumulation_roundoff). A ratio
// |D - R| / bound above 1 anywhere, or a NaN/inf, means the result is wrong.
#include <cstdint>
#include <vector>

#include "fp8/tensor.hpp"
#include "gemm/engine.hpp"

namespace shakedown {

struct GemmCheck {
  std::int64_t rows_checked = 0;
  double max_rel_err = 0;         // max |D - R| / max |R| over the checked rows (normwise)
  double err_bound_ratio = 0;     // max |D - R| / bound (> 1: outside the stated bound; inf: NaN)
  std::int64_t worst_index = -1;  // row-major index in D of the element with the largest ratio
  double expected = 0, got = 0;   // R and D there
};

// Checks rows of D against the fp64 reference: `d_rows` holds exactly the rows `rows` of D, in
// that order (GemmProblem::result_rows), or all of D when `rows` is empty. Memory stays bounded
// (B and the reference are formed in blocks of D's columns) whatever the shape.
GemmCheck check_gemm_result(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                            const GemmOutput& d_rows, const std::vector<std::int64_t>& rows,
                            double accumulation_roundoff,
                            std::int64_t block_doubles = std::int64_t{1} << 24);

// The output's unit roundoff: 2^-8 for bf16, 2^-24 for fp32.
double output_roundoff(GemmOut out);
// c_k above.
double accumulation_bound(std::int64_t k, double u);

}  // namespace shakedown
