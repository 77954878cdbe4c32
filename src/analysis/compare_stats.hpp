#pragma once
// The statistics of `shakedown compare` (before/after a maintenance): is a change beyond noise,
// and how large is it. Conventions as scipy.stats.mannwhitneyu and R's wilcox.test:
//  - two-sided Mann-Whitney U, exact when the smaller sample has at most 8 values and there are
//    no ties, else the normal approximation with tie and continuity corrections;
//  - the Hodges-Lehmann shift (the median of all pairwise differences x_i - y_j, not the
//    difference of medians) with R's exact confidence interval from the U null distribution
//    (its normal approximation for samples too large to count).
// Timings are compared on log(time), so the shift is a ratio: exp(shift).
#include <cstddef>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace shakedown {

// The exact null distribution of U for sample sizes (m, n), counted once per sizes: a comparison
// judges thousands of items of the same sizes (20 iterations against 20), and counting it is
// O(m n * mn). Owned by the caller (no global state); not thread-safe.
class UNullCounts {
 public:
  const std::vector<double>& operator()(std::size_t m, std::size_t n);

 private:
  std::map<std::pair<std::size_t, std::size_t>, std::vector<double>> memo_;
};

struct UTest {
  double u1 = 0;       // U of x against y (ties count 1/2)
  double p = 1;        // two-sided
  bool exact = false;  // the exact null distribution was used
  std::size_t n1 = 0, n2 = 0;
};
// kAuto: exact when the smaller sample has at most 8 values and nothing ties (scipy's rule).
enum class UMethod { kAuto, kExact, kAsymptotic };
// NaN values are left out. p = 1 when either side is empty. `counts`: a cache of the exact null
// distributions (null: counted here).
UTest mann_whitney_two_sided(std::span<const double> x, std::span<const double> y,
                             UMethod method = UMethod::kAuto, UNullCounts* counts = nullptr);

struct Shift {
  double estimate = 0;    // median of x_i - y_j
  double lo = 0, hi = 0;  // confidence interval
  double confidence = 0;  // the level achieved (exact intervals are discrete)
};
// The shift of x against y with a two-sided 1 - alpha interval. NaN fields when a side is empty.
Shift hodges_lehmann(std::span<const double> x, std::span<const double> y, double alpha,
                     UNullCounts* counts = nullptr);

}  // namespace shakedown
