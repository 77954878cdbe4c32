// The devices phase's pair analysis on synthetic matrices: healthy noise names nothing; a slow
// device, a slow pair and one slow direction are named exactly.
#include <gtest/gtest.h>

#include <random>

#include "analysis/devices_report.hpp"

namespace shakedown {
namespace {

constexpr std::size_t kTrials = 5;
const StragglerLimits kLimits{0.10, 3.5, 0.01};

// Three modes of a g-device node, every pair ~`base` GB/s with 3% noise (and occasional
// interference: one sample in 20 up to 30% slower), `slow(src, dst)` dividing a pair's rate.
template <class Slow>
std::vector<PairMatrix> node(std::size_t g, unsigned seed, Slow slow, double base = 300) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(1.0, 0.03);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<PairMatrix> modes;
  for (const char* mode : {"unidirectional", "bidirectional", "concurrent"}) {
    PairMatrix m{mode, kTrials, g, std::vector<double>(kTrials * g * g, std::nan(""))};
    for (std::size_t i = 0; i < kTrials; ++i) {
      for (std::size_t s = 0; s < g; ++s) {
        for (std::size_t t = 0; t < g; ++t) {
          if (s == t) continue;
          double v = base * noise(rng) / slow(s, t);
          if (u(rng) < 0.05) v /= 1 + 0.3 * u(rng);
          m.gbps[(i * g + s) * g + t] = v;
        }
      }
    }
    modes.push_back(std::move(m));
  }
  return modes;
}

TEST(DevicePairs, HealthyNoiseNamesNothing) {
  int named = 0;
  for (unsigned seed = 1; seed <= 100; ++seed) {
    for (std::size_t g : {3, 4, 8}) {
      const PairOutliers o = pair_outliers(node(g, seed, [](auto, auto) { return 1.0; }), kLimits);
      named += static_cast<int>(o.devices.size() + o.pairs.size());
    }
  }
  EXPECT_EQ(named, 0);
}

TEST(DevicePairs, SlowDeviceIsOneFindingAboutTheDevice) {
  for (std::size_t g : {3, 4, 8}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      const std::size_t bad = seed % g;
      const PairOutliers o = pair_outliers(
          node(g, seed,
               [&](std::size_t s, std::size_t t) { return s == bad || t == bad ? 1.6 : 1.0; }),
          kLimits);
      ASSERT_EQ(o.devices.size(), 1u) << "g " << g << " seed " << seed;
      EXPECT_EQ(o.devices[0].rank, static_cast<int>(bad));
      EXPECT_TRUE(o.pairs.empty()) << "its pairs are not named one by one";
    }
  }
}

TEST(DevicePairs, SlowLinkBothWaysIsOnePair) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const PairOutliers o =
        pair_outliers(node(8, seed,
                           [](std::size_t s, std::size_t t) {
                             return (s == 2 && t == 5) || (s == 5 && t == 2) ? 2.0 : 1.0;
                           }),
                      kLimits);
    EXPECT_TRUE(o.devices.empty()) << "seed " << seed;
    ASSERT_EQ(o.pairs.size(), 1u) << "seed " << seed;
    EXPECT_EQ(o.pairs[0].src, 2);
    EXPECT_EQ(o.pairs[0].dst, 5);
    EXPECT_TRUE(o.pairs[0].both_ways);
  }
}

TEST(DevicePairs, OneSlowDirectionIsNamedWithItsDirection) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const PairOutliers o = pair_outliers(
        node(8, seed, [](std::size_t s, std::size_t t) { return s == 6 && t == 1 ? 2.0 : 1.0; }),
        kLimits);
    EXPECT_TRUE(o.devices.empty()) << "seed " << seed;
    ASSERT_EQ(o.pairs.size(), 1u) << "seed " << seed;
    EXPECT_EQ(o.pairs[0].src, 6);
    EXPECT_EQ(o.pairs[0].dst, 1);
    EXPECT_FALSE(o.pairs[0].both_ways);
  }
}

TEST(DevicePairs, TwoDevicesCannotBeComparedAndSaySo) {
  const PairOutliers o = pair_outliers(node(2, 1, [](auto, auto) { return 1.0; }), kLimits);
  EXPECT_TRUE(o.devices.empty() && o.pairs.empty());
  EXPECT_FALSE(o.devices_unjudged.empty());
  EXPECT_FALSE(o.pairs_unjudged.empty());
}

}  // namespace
}  // namespace shakedown
