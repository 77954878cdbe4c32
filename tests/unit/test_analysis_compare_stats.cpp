// The before/after statistics against scipy's and R's published numbers: the scipy
// mannwhitneyu docstring's example (exact and asymptotic p), and the Hodges-Lehmann shift with
// R's exact interval on the same data.
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace shakedown
