#include "gemm/engine.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown {

GemmOut parse_gemm_out(const std::string& text) {
  if (text == "bf16") return GemmOut::kBF16;
  if (text == "fp32") return GemmOut::kFP32;
  throw UsageError("GEMM output type '" + text + "' is not one of bf16, fp32");
}

const char* gemm_out_name(GemmOut out) {
  return out == GemmOut::kBF16 ? "bf16" : "fp32";
}

GemmOutput GemmProblem::result_rows(const std::vector<std::int64_t>& rows) {
  const GemmOutput all = result();
  GemmOutput out;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.cols = all.cols;
  out.type = all.type;
  out.values.reserve(rows.size() * static_cast<std::size_t>(all.cols));
  for (std::int64_t r : rows) {
    if (r < 0 || r >= all.rows) {
      throw InternalError("result_rows: row " + std::to_string(r) + " outside D's " +
                          std::to_string(all.rows) + " rows");
    }
    const auto begin = all.values.begin() + r * all.cols;
    out.values.insert(out.values.end(), begin, begin + all.cols);
  }
  out.amax = fp8::amax(out.values);
  return out;
}

GemmOutput GemmEngine::run(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                           const GemmOptions& options) {
  auto problem = prepare(a, b, options);
  problem->run();
  return problem->result();
}

std::string describe_gemm(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, GemmOut out) {
  return std::to_string(a.rows) + " x " + std::to_string(b.rows) + " x " + std::to_string(a.cols) +
         " (m x n x k), A " + std::string(fp8::name(a.format)) + ", B " +
         std::string(fp8::name(b.format)) + " -> " + gemm_out_name(out);
}

void check_gemm_operands(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b) {
  const std::string what = describe_gemm(a, b, GemmOut::kFP32);
  if (a.rows <= 0 || a.cols <= 0 || b.rows <= 0 || b.cols <= 0) {
    throw UsageError("GEMM " + what + ": every dimension must be at least 1");
  }
  if (a.cols != b.cols) {
    throw UsageError("GEMM: A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                     " and B is " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": both must have k columns (D = A B^T)");
  }
  if (a.data.size() != static_cast<std::size_t>(a.size()) ||
      b.data.size() != static_cast<std::size_t>(b.size())) {
    throw InternalError("GEMM " + what + ": operand data size does not match its shape");
  }
  if (a.format == fp8::Format::kE5M2 && b.format == fp8::Format::kE5M2) {
    throw UsageError("GEMM " + what +
                     ": E5M2 x E5M2 is not supported (cuBLASLt has no such kernel; use E4M3 for "
                     "at least one operand, as the hybrid recipe does)");
  }
}

}  // namespace shakedown
