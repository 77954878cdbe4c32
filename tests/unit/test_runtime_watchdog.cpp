// Which ranks the watchdog names when a step times out (pure logic; the MPI path is in e2e).
#include <gtest/gtest.h>

#include "runtime/watchdog.hpp"

using namespace shakedown;

namespace {
std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) {
    out.push_back("rank " + std::to_string(r) + " (host vm, node " + std::to_string(r / 2) + ")");
  }
  return out;
}
}  // namespace

TEST(Watchdog, NothingBeforeTimeout) {
  std::vector<RankPosition> p = {{3, "phase inventory"}, {2, "clock sync"}};
  std::map<std::int64_t, StepSeen> steps = {{2, {"clock sync", 5.5, 5}},
                                            {3, {"phase inventory", 4.9, 5}}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
}

TEST(Watchdog, NamesTheRankThatNeverArrived) {
  std::vector<RankPosition> p = {
      {3, "phase inventory"}, {2, "topology"}, {3, "phase inventory"}, {3, "phase inventory"}};
  std::map<std::int64_t, StepSeen> steps = {{2, {"topology", 9, 5}},
                                            {3, {"phase inventory", 5.1, 5}}};
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{1});
  EXPECT_NE(r.message.find("rank 1 (host vm, node 0) did not reach 'phase inventory' within 5 s"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("last at 'topology'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("3 of 4 ranks got there"), std::string::npos) << r.message;
}

TEST(Watchdog, BlamesTheSlowestNotThoseWaitingForIt) {
  // Rank 1 stalled before inventory; rank 0 waits for it inside the gather while ranks 2 and 3,
  // whose sends completed eagerly, already wait at the next barrier.
  std::vector<RankPosition> p = {{4, "phase inventory"},
                                 {3, "topology"},
                                 {5, "barrier after inventory"},
                                 {5, "barrier after inventory"}};
  std::map<std::int64_t, StepSeen> steps = {{3, {"topology", 8, 5}},
                                            {4, {"phase inventory", 6, 5}},
                                            {5, {"barrier after inventory", 5.5, 5}}};
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{1});
  EXPECT_EQ(r.message.find("rank 1"), 0u) << r.message;
  EXPECT_NE(r.message.find("did not reach 'phase inventory'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("rank 0 (host vm, node 0) is at 'phase inventory', probably waiting"),
            std::string::npos)
      << r.message;
}

TEST(Watchdog, SeveralLaggardsAllNamed) {
  std::vector<RankPosition> p = {
      {5, "barrier after inventory"}, {4, "phase inventory"}, {4, "phase inventory"}};
  std::map<std::int64_t, StepSeen> steps = {{4, {"phase inventory", 40, 30}},
                                            {5, {"barrier after inventory", 31, 30}}};
  StallReport r = assess_positions(p, names(3), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, (std::vector<int>{1, 2}));
  EXPECT_NE(r.message.find("rank 1 (host vm, node 0), rank 2"), std::string::npos) << r.message;
}

TEST(Watchdog, EveryRankInsideTheSameStep) {
  std::vector<RankPosition> p(4, {7, "collectives/all_reduce 1 MiB"});
  std::map<std::int64_t, StepSeen> steps = {{7, {"collectives/all_reduce 1 MiB", 59, 60}}};
  EXPECT_FALSE(assess_positions(p, names(4), steps).stalled);
  steps[7].since_s = 61;
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_TRUE(r.laggards.empty());
  EXPECT_NE(r.message.find("all 4 ranks are inside it"), std::string::npos) << r.message;
}

TEST(Watchdog, EachStepHasItsOwnTimeout) {
  // A long step (timeout 600 s) that ranks are legitimately inside for 100 s is not a stall.
  std::vector<RankPosition> p = {{2, "checkpoint write"}, {1, "phase checkpoint"}};
  std::map<std::int64_t, StepSeen> steps = {{1, {"phase checkpoint", 150, 600}},
                                            {2, {"checkpoint write", 100, 600}}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
}

TEST(Watchdog, LongStepIsNotCutShortByTheBarrierAfterIt) {
  // Rank 1 is 400 s into a 600 s step; the others have waited 400 s at a 300 s barrier.
  std::vector<RankPosition> p = {{6, "barrier after checkpoint"}, {5, "checkpoint write"}};
  std::map<std::int64_t, StepSeen> steps = {{5, {"checkpoint write", 420, 600}},
                                            {6, {"barrier after checkpoint", 400, 300}}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
  steps[6].since_s = 601;
  StallReport r = assess_positions(p, names(2), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_NE(r.message.find("within 600 s"), std::string::npos) << r.message;
}
