#include "analysis/compare_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "analysis/stragglers.hpp"
#include "core/stats.hpp"

namespace shakedown {

namespace {

constexpr std::size_t kExactMax = 8;  // scipy's "auto": exact when min(n1, n2) <= 8, no ties
// Exact confidence intervals count the null distribution up to this many pairs; beyond, the
// normal approximation of its quantile.
constexpr std::size_t kExactPairs = 40000;

std::vector<double> without_nan(std::span<const double> v) {
  std::vector<double> out;
  for (double x : v) {
    if (!std::isnan(x)) out.push_back(x);
  }
  return out;
}

double normal_quantile(double p) {
  // Acklam's rational approximation refined by one Newton step: |error| < 1e-12.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  return x - e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
}

// The null counts from the cache, or counted into `own` without one.
const std::vector<double>& null_counts(UNullCounts* cache, std::vector<double>& own, std::size_t m,
                                       std::size_t n) {
  if (cache) return (*cache)(m, n);
  own = mann_whitney_null_counts(m, n);
  return own;
}

}  // namespace

const std::vector<double>& UNullCounts::operator()(std::size_t m, std::size_t n) {
  auto [it, added] = memo_.try_emplace({m, n});
  if (added) it->second = mann_whitney_null_counts(m, n);
  return it->second;
}

UTest mann_whitney_two_sided(std::span<const double> xs, std::span<const double> ys, UMethod method,
                             UNullCounts* cache) {
  const std::vector<double> x = without_nan(xs), y = without_nan(ys);
  UTest t;
  t.n1 = x.size();
  t.n2 = y.size();
  if (x.empty() || y.empty()) return t;
  t.u1 = mann_whitney_u(x, y);
  const double n1 = static_cast<double>(t.n1), n2 = static_cast<double>(t.n2);
  const double u = std::max(t.u1, n1 * n2 - t.u1);
  const double ties = mann_whitney_tie_sum(x, y);
  const bool exact = method == UMethod::kExact ||
                     (method == UMethod::kAuto && std::min(t.n1, t.n2) <= kExactMax && ties == 0);
  if (exact) {
    t.exact = true;
    std::vector<double> own;
    const std::vector<double>& counts = null_counts(cache, own, t.n1, t.n2);
    double total = 0, tail = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      total += counts[k];
      if (static_cast<double>(k) >= u - 1e-9) tail += counts[k];
    }
    t.p = std::min(1.0, 2 * tail / total);
    return t;
  }
  const double N = n1 + n2;
  const double var = n1 * n2 / 12 * ((N + 1) - ties / (N * (N - 1)));
  if (var <= 0) return t;  // every value equal: no evidence either way
  const double z = (u - n1 * n2 / 2 - 0.5) / std::sqrt(var);
  t.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 x the upper tail
  return t;
}

Shift hodges_lehmann(std::span<const double> xs, std::span<const double> ys, double alpha,
                     UNullCounts* cache) {
  const std::vector<double> x = without_nan(xs), y = without_nan(ys);
  Shift s{kNaN, kNaN, kNaN, kNaN};
  if (x.empty() || y.empty()) return s;
  std::vector<double> diffs;
  diffs.reserve(x.size() * y.size());
  for (double a : x) {
    for (double b : y) diffs.push_back(a - b);
  }
  const std::size_t mn = diffs.size();
  // The order statistics needed (the median, the interval's ends) by selection, O(mn) rather
  // than a sort: the median splits the differences, each end is selected within its side.
  const auto at = [&](std::size_t k) { return diffs.begin() + static_cast<std::ptrdiff_t>(k); };
  const std::size_t mid = (mn - 1) / 2;  // the lower middle
  std::nth_element(diffs.begin(), at(mid), diffs.end());
  const double lower_middle = diffs[mid];
  const double upper_middle =
      mn % 2 == 1 ? lower_middle : *std::min_element(at(mid + 1), diffs.end());
  s.estimate = 0.5 * (lower_middle + upper_middle);
  // diffs[k] for k below the middle (selected in [0, mid)) or above it (in (mid, mn)).
  auto order = [&](std::size_t k) {
    if (k == mid) return lower_middle;
    if (k < mid) {
      std::nth_element(diffs.begin(), at(k), at(mid));
    } else {
      std::nth_element(at(mid + 1), at(k), diffs.end());
    }
    return diffs[k];
  };
  // qu: the alpha/2 quantile of U's null distribution (R's qwilcox: the smallest k with
  // P(U <= k) >= alpha/2), at least 1; the interval is the qu-th and (mn - qu + 1)-th
  // differences (1-based).
  std::size_t qu = 0;
  double below = 0;  // P(U <= qu - 1)
  if (mn <= kExactPairs) {
    std::vector<double> own;
    const std::vector<double>& counts = null_counts(cache, own, x.size(), y.size());
    double total = 0;
    for (double c : counts) total += c;
    double cum = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if ((cum + counts[k]) / total >= alpha / 2) {
        qu = k;
        break;
      }
      cum += counts[k];
    }
    if (qu == 0) qu = 1;
    cum = 0;
    for (std::size_t k = 0; k < qu && k < counts.size(); ++k) cum += counts[k];  // P(U <= qu-1)
    below = cum / total;
  } else {
    const double m = static_cast<double>(x.size()), n = static_cast<double>(y.size());
    const double sd = std::sqrt(m * n * (m + n + 1) / 12);
    const double k = std::floor(m * n / 2 + normal_quantile(alpha / 2) * sd);
    qu = static_cast<std::size_t>(std::max(1.0, k));
    below = 0.5 * std::erfc(-((static_cast<double>(qu) - 0.5 - m * n / 2) / sd) / std::sqrt(2.0));
  }
  qu = std::min(qu, mn);
  const std::size_t ql = mn - qu;
  s.lo = order(qu - 1);
  s.hi = order(std::min(ql, mn - 1));
  s.confidence = 1 - 2 * below;
  return s;
}

}  // namespace shakedown
