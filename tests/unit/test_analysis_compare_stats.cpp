// The before/after statistics against scipy's and R's published numbers: the scipy
// mannwhitneyu docstring's example (exact and asymptotic p), and the Hodges-Lehmann shift with
// R's exact interval on the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "analysis/compare_stats.hpp"

namespace shakedown {
namespace {

const std::vector<double> kX = {19, 22, 16, 29, 24};
const std::vector<double> kY = {20, 11, 17, 12};

TEST(CompareStats, ScipyDocstringExactP) {
  const UTest t = mann_whitney_two_sided(kX, kY);
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u1, 17);
  EXPECT_NEAR(t.p, 0.1111111111111111, 1e-15);
  EXPECT_EQ(t.n1, 5u);
  EXPECT_EQ(t.n2, 4u);
  // Symmetric in its arguments: U of y against x is n1 n2 - 17 = 3, the same p.
  const UTest r = mann_whitney_two_sided(kY, kX);
  EXPECT_DOUBLE_EQ(r.u1, 3);
  EXPECT_NEAR(r.p, t.p, 1e-15);
}

TEST(CompareStats, ScipyDocstringAsymptoticP) {
  // scipy method="asymptotic": continuity-corrected normal approximation.
  const UTest t = mann_whitney_two_sided(kX, kY, UMethod::kAsymptotic);
  EXPECT_FALSE(t.exact);
  EXPECT_NEAR(t.p, 0.11134688653314041, 1e-12);
  // A tie makes "auto" take the approximation (the exact counts assume no ties).
  std::vector<double> y = kY;
  y.push_back(19);  // ties x's 19
  EXPECT_FALSE(mann_whitney_two_sided(kX, y).exact);
}

TEST(CompareStats, HodgesLehmannWithRsExactInterval) {
  const Shift s = hodges_lehmann(kX, kY, 0.05);
  EXPECT_DOUBLE_EQ(s.estimate, 7.0);
  EXPECT_DOUBLE_EQ(s.lo, -1);
  EXPECT_DOUBLE_EQ(s.hi, 17);
  EXPECT_NEAR(s.confidence, 0.968, 0.0005);
}

TEST(CompareStats, EmptyOrConstantSamplesShowNothing) {
  EXPECT_EQ(mann_whitney_two_sided({}, kY).p, 1);
  const std::vector<double> same(12, 3.0);
  EXPECT_EQ(mann_whitney_two_sided(same, same).p, 1);
  EXPECT_TRUE(std::isnan(hodges_lehmann({}, kY, 0.05).estimate));
}

TEST(CompareStats, AClearShiftOnLargeSamplesIsSignificantAndMeasured) {
  std::vector<double> before, after;
  for (int i = 0; i < 50; ++i) {
    before.push_back(std::log(100.0 + (i % 10)));
    after.push_back(std::log(120.0 + (i % 10)));  // 20% slower
  }
  const UTest t = mann_whitney_two_sided(after, before);
  EXPECT_FALSE(t.exact);
  EXPECT_LT(t.p, 1e-6);
  const Shift s = hodges_lehmann(after, before, 0.05);
  EXPECT_NEAR(std::exp(s.estimate), 1.2, 0.02);
  EXPECT_LT(s.lo, s.estimate);
  EXPECT_GT(s.hi, s.estimate);
}

// The estimate and interval are order statistics of the pairwise differences, found by
// selection: they must be exactly what sorting all differences gives (R's definition), for odd
// and even counts, with and without a cache of the null counts, ties included.
TEST(CompareStats, HodgesLehmannSelectionEqualsTheSortedDifferences) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  UNullCounts cache;
  for (const auto& [n1, n2] : {std::pair{5, 4}, {7, 7}, {20, 20}, {3, 9}, {30, 11}, {250, 200}}) {
    std::vector<double> x, y;
    for (int i = 0; i < n1; ++i) x.push_back(std::round(noise(rng) * 8) / 4 + 0.5);
    for (int i = 0; i < n2; ++i) y.push_back(std::round(noise(rng) * 8) / 4);
    std::vector<double> d;
    for (double a : x) {
      for (double b : y) d.push_back(a - b);
    }
    std::sort(d.begin(), d.end());
    const std::size_t mn = d.size();
    const double median = mn % 2 ? d[mn / 2] : 0.5 * (d[mn / 2 - 1] + d[mn / 2]);
    const Shift plain = hodges_lehmann(x, y, 0.05);
    const Shift cached = hodges_lehmann(x, y, 0.05, &cache);
    EXPECT_DOUBLE_EQ(plain.estimate, median) << n1 << "x" << n2;
    // The interval's ends are differences, symmetric in rank: the k-th and (mn - k + 1)-th.
    const auto lo = std::find(d.begin(), d.end(), plain.lo);
    const auto hi = std::find(d.rbegin(), d.rend(), plain.hi);
    ASSERT_NE(lo, d.end()) << n1 << "x" << n2;
    ASSERT_NE(hi, d.rend()) << n1 << "x" << n2;
    EXPECT_LE(plain.lo, plain.estimate);
    EXPECT_GE(plain.hi, plain.estimate);
    EXPECT_DOUBLE_EQ(cached.estimate, plain.estimate);
    EXPECT_DOUBLE_EQ(cached.lo, plain.lo);
    EXPECT_DOUBLE_EQ(cached.hi, plain.hi);
    EXPECT_DOUBLE_EQ(cached.confidence, plain.confidence);
    EXPECT_DOUBLE_EQ(mann_whitney_two_sided(x, y, UMethod::kAuto, &cache).p,
                     mann_whitney_two_sided(x, y).p);
  }
}

}  // namespace
}  // namespace shakedown
