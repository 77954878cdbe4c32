#include "gemm/reference.hpp"

#include <cblas.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace shakedown {

double output_roundoff(GemmOut out) {
  return out == GemmOut::kBF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
}

double accumulation_bound(std::int64_t k, double u) {
  const double n = static_cast<double>(k + 2);
  if (n * u <= 0.01) return n * u / (1.0 - n * u);
  return 8.0 * std::sqrt(n) * u;
}

namespace {

// Rows of an Fp8Tensor dequantised exactly into double (decode is exact; scale_inv is a float).
std::vector<double> dequantize_rows(const fp8::Fp8Tensor& t,
                                    const std::vector<std::int64_t>& rows) {
  const auto& table = fp8::decode_table(t.format);
  const double scale_inv = t.scale_inv;
  std::vector<double> out(rows.size() * static_cast<std::size_t>(t.cols));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint8_t* src = t.data.data() + rows[r] * t.cols;
    double* dst = out.data() + r * static_cast<std::size_t>(t.cols);
    for (std::int64_t c = 0; c < t.cols; ++c)
      dst[c] = static_cast<double>(table[src[c]]) * scale_inv;
  }
  return out;
}

std::vector<double> row_norms(const std::vector<double>& m, std::int64_t rows, std::int64_t cols) {
  std::vector<double> norms(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c)
      s += m[static_cast<std::size_t>(r * cols + c)] * m[static_cast<std::size_t>(r * cols + c)];
    norms[static_cast<std::size_t>(r)] = std::sqrt(s);
  }
  return norms;
}

}  // namespace

GemmCheck check_gemm_result(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b, const GemmOutput& d,
                            const std::vector<std::int64_t>& rows_in,
                            double accumulation_roundoff) {
  const std::int64_t m = a.rows, n = b.rows, k = a.cols;
  if (d.rows != m || d.cols != n || d.values.size() != static_cast<std::size_t>(m * n)) {
    throw InternalError("check_gemm_result: D is not " + std::to_string(m) + " x " +
                        std::to_string(n));
  }
  std::vector<std::int64_t> rows = rows_in;
  if (rows.empty()) {
    rows.resize(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) rows[static_cast<std::size_t>(i)] = i;
  }
  for (std::int64_t r : rows) {
    if (r < 0 || r >= m) throw InternalError("check_gemm_result: row " + std::to_string(r));
  }
  std::vector<std::int64_t> all_b(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) all_b[static_cast<std::size_t>(j)] = j;

  const auto nr = static_cast<std::int64_t>(rows.size());
  const std::vector<double> ad = dequantize_rows(a, rows);
  const std::vector<double> bd = dequantize_rows(b, all_b);
  std::vector<double> ref(static_cast<std::size_t>(nr * n));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(nr), static_cast<int>(n),
              static_cast<int>(k), 1.0, ad.data(), static_cast<int>(k), bd.data(),
              static_cast<int>(k), 0.0, ref.data(), static_cast<int>(n));
  const std::vector<double> an = row_norms(ad, nr, k);
  const std::vector<double> bn = row_norms(bd, n, k);
  const double u_out = output_roundoff(d.type);
  const double c_k = accumulation_bound(k, accumulation_roundoff);

  GemmCheck check;
  check.rows_checked = nr;
  double max_err = 0, max_ref = 0;
  for (std::int64_t r = 0; r < nr; ++r) {
    const std::int64_t i = rows[static_cast<std::size_t>(r)];
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = ref[static_cast<std::size_t>(r * n + j)];
      const double got = d.values[static_cast<std::size_t>(i * n + j)];
      const double err = std::fabs(got - want);
      // The smallest positive double keeps an all-zero row/column from dividing 0 by 0.
      // (1 + u_out): the output rounding applies to the accumulated value, error included.
      const double bound =
          u_out * std::fabs(want) +
          (1 + u_out) * c_k * an[static_cast<std::size_t>(r)] * bn[static_cast<std::size_t>(j)] +
          std::numeric_limits<double>::denorm_min();
      const double ratio =
          std::isfinite(err) ? err / bound : std::numeric_limits<double>::infinity();
      max_ref = std::max(max_ref, std::fabs(want));
      if (std::isfinite(err)) {
        max_err = std::max(max_err, err);
      } else {
        max_err = std::numeric_limits<double>::infinity();
      }
      if (ratio > check.err_bound_ratio || check.worst_index < 0) {
        check.err_bound_ratio = ratio;
        check.worst_index = i * n + j;
        check.expected = want;
        check.got = got;
      }
    }
  }
  check.max_rel_err = max_ref > 0 ? max_err / max_ref : max_err;
  return check;
}

}  // namespace shakedown
