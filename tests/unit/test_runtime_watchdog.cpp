// Which ranks the watchdog names when a step times out (pure logic; the MPI path is in e2e).
#include <gtest/gtest.h>

#include <csignal>

#include "runtime/watchdog.hpp"

using namespace shakedown;

namespace {
StepSeen seen(std::string label, double since_s, double timeout_s) {
  StepSeen s;
  s.label = std::move(label);
  s.since_s = since_s;
  s.timeout_s = timeout_s;
  return s;
}
RankPosition at(std::int64_t seq, std::string label) {
  RankPosition p;
  p.seq = seq;
  p.label = std::move(label);
  return p;
}
std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) {
    out.push_back("rank " + std::to_string(r) + " (host vm, node " + std::to_string(r / 2) + ")");
  }
  return out;
}
}  // namespace

TEST(Watchdog, NothingBeforeTimeout) {
  std::vector<RankPosition> p = {at(3, "phase inventory"), at(2, "clock sync")};
  std::map<std::int64_t, StepSeen> steps = {{2, seen("clock sync", 5.5, 5)},
                                            {3, seen("phase inventory", 4.9, 5)}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
}

TEST(Watchdog, NamesTheRankThatNeverArrived) {
  std::vector<RankPosition> p = {at(3, "phase inventory"), at(2, "topology"),
                                 at(3, "phase inventory"), at(3, "phase inventory")};
  std::map<std::int64_t, StepSeen> steps = {{2, seen("topology", 9, 5)},
                                            {3, seen("phase inventory", 5.1, 5)}};
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
  std::vector<RankPosition> p = {at(4, "phase inventory"), at(3, "topology"),
                                 at(5, "barrier after inventory"),
                                 at(5, "barrier after inventory")};
  std::map<std::int64_t, StepSeen> steps = {{3, seen("topology", 8, 5)},
                                            {4, seen("phase inventory", 6, 5)},
                                            {5, seen("barrier after inventory", 5.5, 5)}};
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
  std::vector<RankPosition> p = {at(5, "barrier after inventory"), at(4, "phase inventory"),
                                 at(4, "phase inventory")};
  std::map<std::int64_t, StepSeen> steps = {{4, seen("phase inventory", 40, 30)},
                                            {5, seen("barrier after inventory", 31, 30)}};
  StallReport r = assess_positions(p, names(3), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, (std::vector<int>{1, 2}));
  EXPECT_NE(r.message.find("rank 1 (host vm, node 0), rank 2"), std::string::npos) << r.message;
}

TEST(Watchdog, EveryRankInsideTheSameStep) {
  std::vector<RankPosition> p(4, at(7, "collectives/all_reduce 1 MiB"));
  std::map<std::int64_t, StepSeen> steps = {{7, seen("collectives/all_reduce 1 MiB", 59, 60)}};
  EXPECT_FALSE(assess_positions(p, names(4), steps).stalled);
  steps[7].since_s = 61;
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_TRUE(r.laggards.empty());
  EXPECT_NE(r.message.find("all 4 ranks are alive and inside it"), std::string::npos) << r.message;
}

TEST(Watchdog, EachStepHasItsOwnTimeout) {
  // A long step (timeout 600 s) that ranks are legitimately inside for 100 s is not a stall.
  std::vector<RankPosition> p = {at(2, "checkpoint write"), at(1, "phase checkpoint")};
  std::map<std::int64_t, StepSeen> steps = {{1, seen("phase checkpoint", 150, 600)},
                                            {2, seen("checkpoint write", 100, 600)}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
}

TEST(Watchdog, LongStepIsNotCutShortByTheBarrierAfterIt) {
  // Rank 1 is 400 s into a 600 s step; the others have waited 400 s at a 300 s barrier.
  std::vector<RankPosition> p = {at(6, "barrier after checkpoint"), at(5, "checkpoint write")};
  std::map<std::int64_t, StepSeen> steps = {{5, seen("checkpoint write", 420, 600)},
                                            {6, seen("barrier after checkpoint", 400, 300)}};
  EXPECT_FALSE(assess_positions(p, names(2), steps).stalled);
  steps[6].since_s = 601;
  StallReport r = assess_positions(p, names(2), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_NE(r.message.find("within 600 s"), std::string::npos) << r.message;
}

// (a) A rank frozen inside a collective (SIGSTOP): its watchdog stopped too, so it is silent
// while the others still answer. It is named, not "all ranks are inside it".
TEST(Watchdog, NamesTheFrozenRankInsideACollective) {
  std::vector<RankPosition> p(4, at(7, "collectives world/all_reduce 1 MiB"));
  p[2].liveness = Liveness::kStopped;
  p[2].silent_s = 9.6;
  std::map<std::int64_t, StepSeen> steps = {
      {7, seen("collectives world/all_reduce 1 MiB", 11, 10)}};
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{2});
  EXPECT_EQ(r.message.find("rank 2 (host vm, node 1) stopped answering 9.6 s ago: its process is "
                           "stopped"),
            0u)
      << r.message;
  EXPECT_NE(r.message.find("the other 3 of 4 ranks have waited for 11 s"), std::string::npos)
      << r.message;
}

// A rank frozen in one rail's collective keeps its rail peer short of the same step: the frozen
// one is named, and the one that still answers is said to wait for it (it led the headline).
TEST(Watchdog, AFrozenLaggardIsNamedBeforeTheLaggardWaitingForIt) {
  std::vector<RankPosition> p = {
      at(7, "collectives rail_0/broadcast 1 MiB"), at(6, "collectives rail_1/broadcast 1 MiB"),
      at(7, "collectives rail_0/broadcast 1 MiB"), at(6, "collectives rail_1/broadcast 1 MiB")};
  p[3].liveness = Liveness::kStopped;
  p[3].silent_s = 9;
  std::map<std::int64_t, StepSeen> steps = {
      {6, seen("collectives rail_1/broadcast 1 MiB", 20, 10)},
      {7, seen("collectives rail_0/broadcast 1 MiB", 12, 10)}};
  StallReport r = assess_positions(p, names(4), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{3});
  EXPECT_EQ(r.message.find("rank 3 (host vm, node 1) did not reach"), 0u) << r.message;
  EXPECT_NE(r.message.find("2 of 4 ranks got there (rank 1 (host vm, node 0), which answers, is "
                           "short of it too, probably waiting for it)"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("rank 3 (host vm, node 1) stopped answering 9 s ago"), std::string::npos)
      << r.message;
}

TEST(Watchdog, ASilentLaggardIsSaidToBeSilent) {
  std::vector<RankPosition> p = {at(4, "phase gemm"), at(3, "collectives x"), at(4, "phase gemm")};
  p[1].liveness = Liveness::kSilent;
  p[1].silent_s = 30;
  std::map<std::int64_t, StepSeen> steps = {{3, seen("collectives x", 40, 10)},
                                            {4, seen("phase gemm", 31, 10)}};
  StallReport r = assess_positions(p, names(3), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_EQ(r.laggards, std::vector<int>{1});
  EXPECT_NE(r.message.find("rank 1 (host vm, node 0) did not reach 'phase gemm'"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("stopped answering 30 s ago: its process is frozen or dead, or its "
                           "node is down"),
            std::string::npos)
      << r.message;
}

// (c) Every rank alive and counting iterations: slow, not hung; the estimate comes from the
// slowest rank's rate.
TEST(Watchdog, ProgressingButLongerThanTheTimeout) {
  std::vector<RankPosition> p(2, at(5, "collectives world/all_reduce 8 B"));
  p[0].done = 2000;
  p[1].done = 1000;
  p[1].idle_s = 0.1;
  StepSeen step = seen("collectives world/all_reduce 8 B", 21, 20);
  step.total = 1000000;
  std::map<std::int64_t, StepSeen> steps = {{5, step}};
  StallReport r = assess_positions(p, names(2), steps);
  ASSERT_TRUE(r.stalled);
  EXPECT_TRUE(r.laggards.empty());
  EXPECT_NE(r.message.find("all 2 ranks are alive and progressing"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("1000 of 1000000 iterations done on the slowest rank"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("about 21000 s at the current rate"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("raise timeouts.phase_s"), std::string::npos) << r.message;
  // The count paused for 3 s (of 21 ms per iteration): not clear yet, wait.
  p[1].idle_s = 3;
  EXPECT_FALSE(assess_positions(p, names(2), {{5, step}}).stalled);
  // The same counts, no longer moving for 30 s: a hang after all.
  p[1].idle_s = 30;
  r = assess_positions(p, names(2), {{5, step}});
  EXPECT_NE(r.message.find("all 2 ranks are alive and inside it with no progress for 30 s"),
            std::string::npos)
      << r.message;
}

// A rank that answered 2 s ago is neither answering nor silent yet: no verdict until it is.
TEST(Watchdog, WaitsWhileARankIsLateButNotSilent) {
  std::vector<RankPosition> p(3, at(5, "collectives world/all_reduce 1 MiB"));
  p[1].silent_s = 2;
  std::map<std::int64_t, StepSeen> steps = {
      {5, seen("collectives world/all_reduce 1 MiB", 11, 10)}};
  EXPECT_FALSE(assess_positions(p, names(3), steps).stalled);
  p[1].liveness = Liveness::kSilent;
  p[1].silent_s = 3.2;
  EXPECT_TRUE(assess_positions(p, names(3), steps).stalled);
}

// One iteration of a huge collective takes longer than the pause limit: 3 done in 60 s, the
// count still for 25 s is within two iterations, so it is progressing.
TEST(Watchdog, SlowIterationsStillCountAsProgress) {
  std::vector<RankPosition> p(2, at(5, "collectives world/all_reduce 16 GiB"));
  p[0].done = p[1].done = 3;
  p[0].idle_s = p[1].idle_s = 25;
  StepSeen step = seen("collectives world/all_reduce 16 GiB", 60, 30);
  step.total = 20;
  StallReport r = assess_positions(p, names(2), {{5, step}});
  ASSERT_TRUE(r.stalled);
  EXPECT_NE(r.message.find("alive and progressing"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("about 400 s at the current rate"), std::string::npos) << r.message;
}

// (c) No iteration finished yet, but the phase estimated the step from the previous size.
TEST(Watchdog, EstimateFromThePhaseWhenNothingIsCountedYet) {
  std::vector<RankPosition> p(2, at(5, "collectives world/all_reduce 16 GiB"));
  StepSeen step = seen("collectives world/all_reduce 16 GiB", 21, 20);
  step.expected_s = 140;
  step.basis = "the 8 GiB rate";
  StallReport r = assess_positions(p, names(2), {{5, step}});
  ASSERT_TRUE(r.stalled);
  EXPECT_NE(r.message.find("which was estimated at 140 s from the 8 GiB rate; its timeout is 20 s"),
            std::string::npos)
      << r.message;
  // An estimate within the timeout says nothing: that is a hang.
  step.expected_s = 5;
  r = assess_positions(p, names(2), {{5, step}});
  EXPECT_NE(r.message.find("no rank finished"), std::string::npos) << r.message;
}

TEST(Watchdog, InterruptReasons) {
  EXPECT_EQ(interrupt_reason(SIGTERM, "rank 0 (host vm, node 0)", {}),
            "interrupted by SIGTERM on rank 0 (host vm, node 0): Slurm time limit, scancel or "
            "Ctrl-C");
  EXPECT_EQ(interrupt_reason(SIGINT, "rank 3 (host vm, node 1)", {}),
            "interrupted by SIGINT on rank 3 (host vm, node 1): Ctrl-C");
  const std::string gone = interrupt_reason(SIGTERM, "rank 0 (host vm, node 0)",
                                            {{"rank 2 (host vm, node 1)", Liveness::kGone}});
  EXPECT_EQ(gone.find("rank 2 (host vm, node 1) ended unexpectedly"), 0u) << gone;
  EXPECT_NE(gone.find("the launcher then ended the job (SIGTERM on rank 0"), std::string::npos)
      << gone;
  const std::string unknown = interrupt_reason(SIGTERM, "rank 0 (host a, node 0)",
                                               {{"rank 5 (host b, node 2)", Liveness::kSilent}});
  EXPECT_EQ(unknown.find("the job was ended by the launcher (SIGTERM on rank 0"), 0u) << unknown;
  EXPECT_NE(unknown.find("rank 5 (host b, node 2) did not answer"), std::string::npos) << unknown;
}
