// Which ranks the watchdog names when a step times out (pure logic; the MPI path is in e2e).
#include <gtest/gtest.h>

#include "runtime/watchdog.hpp"

using namespace shakedown;

namespace {
std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back("rank " + std::to_string(r) + " (host vm, node " +
                                            std::to_string(r / 2) + ")");
  return out;
}
}  // namespace

TEST(Watchdog, NothingBeforeTimeout) {
  std::vector<RankPosition> p = {{3, "phase inventory", false}, {2, "clock sync", false}};
  EXPECT_FALSE(assess_positions(p, names(2), 4.9, 5).stalled);
}

TEST(Watchdog, NamesTheRankThatNeverArrived) {
  std::vector<RankPosition> p = {{3, "phase inventory", false},
                                 {2, "topology", false},
                                 {3, "phase inventory", false},
                                 {3, "phase inventory", false}};
  StallReport r = assess_positions(p, names(4), 5.1, 5);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{1});
  EXPECT_NE(r.message.find("rank 1 (host vm, node 0) did not reach 'phase inventory' within 5"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("last at 'topology'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("3 of 4 ranks are waiting"), std::string::npos) << r.message;
}

TEST(Watchdog, SeveralLaggardsAllNamed) {
  std::vector<RankPosition> p = {{5, "barrier after inventory", false},
                                 {4, "phase inventory", false},
                                 {3, "topology", false}};
  StallReport r = assess_positions(p, names(3), 31, 30);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, (std::vector<int>{1, 2}));
  EXPECT_NE(r.message.find("rank 2"), std::string::npos) << r.message;
}

TEST(Watchdog, EveryRankInsideTheSameStep) {
  std::vector<RankPosition> p(4, {7, "collectives/all_reduce 1 MiB", false});
  StallReport r = assess_positions(p, names(4), 61, 60);
  ASSERT_TRUE(r.stalled);
  EXPECT_TRUE(r.laggards.empty());
  EXPECT_NE(r.message.find("all 4 ranks are inside it"), std::string::npos) << r.message;
}
