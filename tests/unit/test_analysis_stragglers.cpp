// Straggler detection: robust z-score AND a minimum slowdown, NaN ranks ignored.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/stragglers.hpp"

namespace shakedown {
namespace {

TEST(Stragglers, NamesTheSlowRankOnly) {
  const std::vector<double> t = {100, 101, 99, 100, 102, 98, 100, 150};
  const auto s = find_stragglers(t, 3.5, 0.10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 7);
  EXPECT_DOUBLE_EQ(s[0].median, 100);
  EXPECT_NEAR(s[0].slowdown, 0.5, 1e-12);
  EXPECT_NEAR(s[0].z, 0.6745 * 50 / 1.0, 1e-9);  // MAD of the set is 1
}

TEST(Stragglers, NeedsBothCriteria) {
  // 5% slower with a huge z: below the slowdown threshold.
  EXPECT_TRUE(
      find_stragglers(std::vector<double>{100, 100, 100, 100.5, 99.5, 105}, 3.5, 0.10).empty());
  // 30% slower but the spread is wide: z below 3.5.
  EXPECT_TRUE(find_stragglers(std::vector<double>{60, 140, 80, 120, 100, 130}, 3.5, 0.10).empty());
}

TEST(Stragglers, ZeroMadLeavesTheSlowdownToDecide) {
  const auto s = find_stragglers(std::vector<double>{10, 10, 10, 10, 12}, 3.5, 0.10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 4);
  EXPECT_TRUE(std::isinf(s[0].z));
}

TEST(Stragglers, IgnoresNaNAndFastRanks) {
  const double nan = std::nan("");
  // NaN ranks left out of the median: rank 5 (13, 30% slower) is found, rank 3 (fast) is not.
  const auto s = find_stragglers(std::vector<double>{nan, 10, 10, 1, 10, 13, nan}, 3.5, 0.10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 5);
  EXPECT_DOUBLE_EQ(s[0].median, 10);
  EXPECT_TRUE(find_stragglers(std::vector<double>{nan, nan}, 3.5, 0.1).empty());
}

}  // namespace
}  // namespace shakedown
