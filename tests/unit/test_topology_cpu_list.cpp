#include <gtest/gtest.h>

#include "topology/cpu_list.hpp"

namespace shakedown {
namespace {

TEST(TopologyCpuList, ParsesRangesAndSingles) {
  const auto cpus = parse_cpu_list("0-3,8, 10-11");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
}

TEST(TopologyCpuList, EmptyTextIsEmptySet) {
  const auto cpus = parse_cpu_list("  ");
  ASSERT_TRUE(cpus);
  EXPECT_TRUE(cpus->empty());
}

TEST(TopologyCpuList, RejectsGarbage) {
  EXPECT_FALSE(parse_cpu_list("a-b"));
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("0,,2"));
  EXPECT_FALSE(parse_cpu_list("0x3"));
  EXPECT_FALSE(parse_cpu_list("0-2000000000"));
}

TEST(TopologyCpuList, FormatsCompactRanges) {
  EXPECT_EQ(format_cpu_list({8, 0, 1, 2, 3, 3, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({5}), "5");
}

TEST(TopologyCpuList, RoundTrips) {
  const std::string text = "0-11,48-59";
  EXPECT_EQ(format_cpu_list(*parse_cpu_list(text)), text);
}

}  // namespace
}  // namespace shakedown
