#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/stats.hpp"

using namespace shakedown;

TEST(Stats, MedianOddEvenAndNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{nan, 5, nan, 1}), 3);
  EXPECT_TRUE(std::isnan(median(std::vector<double>{nan, nan})));
  EXPECT_TRUE(std::isnan(median(std::vector<double>{})));
}

TEST(Stats, PercentilesInterpolate) {
  std::vector<double> v;
  for (int i = 0; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 0.05), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.95), 95);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 0);
  EXPECT_DOUBLE_EQ(percentile(v, 1), 100);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{1, 2}, 0.25), 1.25);
}

TEST(Stats, PercentileOfSortedAgreesWithPercentile) {
  const std::vector<double> shuffled = {7, 3, 9, 1, 4, 4, 8, 2};
  std::vector<double> sorted = shuffled;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0}) {
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, q), percentile(shuffled, q)) << q;
  }
  EXPECT_TRUE(std::isnan(percentile_of_sorted(std::vector<double>{}, 0.5)));
}

TEST(Stats, MadIgnoresOneOutlier) {
  // 10 ranks at ~100 us, one at 500 us: the MAD stays small, so the outlier stands out.
  std::vector<double> v = {100, 101, 99, 100, 102, 98, 100, 101, 99, 500};
  EXPECT_DOUBLE_EQ(median(v), 100);
  EXPECT_DOUBLE_EQ(mad(v), 1);
}

TEST(Stats, IterationDurationsTakeTheSlowestRankOfEachIteration) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // [3 iterations, 3 ranks]
  const std::vector<double> rows = {1, 5, 2, nan, 3, 4, nan, nan, nan};
  const auto all = shakedown::iteration_durations(rows, 3);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], 5);
  EXPECT_EQ(all[1], 4);
  EXPECT_TRUE(std::isnan(all[2]));
  const std::vector<std::size_t> first_two = {0, 1};
  const auto some = shakedown::iteration_durations(rows, 3, first_two);
  EXPECT_EQ(some[0], 5);
  EXPECT_EQ(some[1], 3);
  EXPECT_TRUE(shakedown::iteration_durations(rows, 0).empty());
}

TEST(Stats, RowAndColumnMediansIgnoreMissingSamples) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // [3 iterations, 3 ranks]
  const std::vector<double> rows = {1, 5, 2, nan, 3, 4, nan, nan, nan};
  const auto per_iteration = shakedown::row_medians(rows, 3);
  ASSERT_EQ(per_iteration.size(), 3u);
  EXPECT_EQ(per_iteration[0], 2);
  EXPECT_EQ(per_iteration[1], 3.5);
  EXPECT_TRUE(std::isnan(per_iteration[2]));
  const auto per_rank = shakedown::column_medians(rows, 3);
  ASSERT_EQ(per_rank.size(), 3u);
  EXPECT_EQ(per_rank[0], 1);
  EXPECT_EQ(per_rank[1], 4);
  EXPECT_EQ(per_rank[2], 3);
  EXPECT_TRUE(shakedown::row_medians(rows, 0).empty());
  EXPECT_TRUE(shakedown::column_medians(rows, 0).empty());
}
