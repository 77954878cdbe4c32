#include "gemm/reference.hpp"

#include <cblas.h>

#include <algorithm>
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
  const double scale_inv = static_cast<double>(t.scale_inv);
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

GemmCheck check_gemm_result(const fp8::Fp8Tensor& a, const fp8::Fp8Tensor& b,
                            const GemmOutput& d_rows, const std::vector<std::int64_t>& rows_in,
                            double accumulation_roundoff, std::int64_t block_doubles) {
  const std::int64_t m = a.rows, n = b.rows, k = a.cols;
  std::vector<std::int64_t> rows = rows_in;
  if (rows.empty()) {
    rows.resize(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) rows[static_cast<std::size_t>(i)] = i;
  }
  const auto nr = static_cast<std::int64_t>(rows.size());
  if (d_rows.rows != nr || d_rows.cols != n ||
      d_rows.values.size() != static_cast<std::size_t>(nr * n)) {
    throw InternalError("check_gemm_result: D holds " + std::to_string(d_rows.rows) + " x " +
                        std::to_string(d_rows.cols) + ", not the " + std::to_string(nr) + " x " +
                        std::to_string(n) + " rows checked");
  }
  for (std::int64_t r : rows) {
    if (r < 0 || r >= m) throw InternalError("check_gemm_result: row " + std::to_string(r));
  }
  const std::vector<double> ad = dequantize_rows(a, rows);
  const std::vector<double> an = row_norms(ad, nr, k);
  const double u_out = output_roundoff(d_rows.type);
  const double c_k = accumulation_bound(k, accumulation_roundoff);

  // B and the reference in blocks of columns of D, so the doubles stay near block_doubles (2^24:
  // 128 MiB) each whatever the shape.
  const std::int64_t block = std::clamp<std::int64_t>(block_doubles / std::max(nr, k), 1, n);
  GemmCheck check;
  check.rows_checked = nr;
  double max_err = 0, max_ref = 0;
  std::vector<double> ref;
  for (std::int64_t j0 = 0; j0 < n; j0 += block) {
    const std::int64_t nb = std::min(block, n - j0);
    std::vector<std::int64_t> b_rows(static_cast<std::size_t>(nb));
    for (std::int64_t j = 0; j < nb; ++j) b_rows[static_cast<std::size_t>(j)] = j0 + j;
    const std::vector<double> bd = dequantize_rows(b, b_rows);
    const std::vector<double> bn = row_norms(bd, nb, k);
    ref.assign(static_cast<std::size_t>(nr * nb), 0.0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(nr), static_cast<int>(nb),
                static_cast<int>(k), 1.0, ad.data(), static_cast<int>(k), bd.data(),
                static_cast<int>(k), 0.0, ref.data(), static_cast<int>(nb));
    for (std::int64_t r = 0; r < nr; ++r) {
      const std::int64_t i = rows[static_cast<std::size_t>(r)];
      for (std::int64_t j = 0; j < nb; ++j) {
        const double want = ref[static_cast<std::size_t>(r * nb + j)];
        const double got =
            static_cast<double>(d_rows.values[static_cast<std::size_t>(r * n + j0 + j)]);
        const double err = std::fabs(got - want);
        // (1 + u_out): the output rounding applies to the accumulated value, error included.
        // The smallest positive double keeps an all-zero row/column from dividing 0 by 0.
        const double bound =
            u_out * std::fabs(want) +
            (1 + u_out) * c_k * an[static_cast<std::size_t>(r)] * bn[static_cast<std::size_t>(j)] +
            std::numeric_limits<double>::denorm_min();
        const double ratio =
            std::isfinite(err) ? err / bound : std::numeric_limits<double>::infinity();
        max_ref = std::max(max_ref, std::fabs(want));
        max_err =
            std::isfinite(err) ? std::max(max_err, err) : std::numeric_limits<double>::infinity();
        if (ratio > check.err_bound_ratio || check.worst_index < 0) {
          check.err_bound_ratio = ratio;
          check.worst_index = i * n + j0 + j;
          check.expected = want;
          check.got = got;
        }
      }
    }
  }
  check.max_rel_err = max_ref > 0 ? max_err / max_ref : max_err;
  return check;
}

}  // namespace shakedown
