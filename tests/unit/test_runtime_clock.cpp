// Clock offset estimation on synthetic timestamps.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/clock.hpp"

using namespace shakedown;

TEST(Clock, SymmetricPathGivesExactOffset) {
  // Peer clock runs 1000 us ahead; one-way delay 5 us each way.
  std::vector<ClockSample> s = {{100, 1105, 110}};
  ClockEstimate e = estimate_offset(s);
  EXPECT_DOUBLE_EQ(e.offset_us, 1000);
  EXPECT_DOUBLE_EQ(e.rtt_us, 10);
}

TEST(Clock, KeepsMinimumRoundTrip) {
  // The second sample was delayed on the way back (queueing): 70 us extra. Its midpoint estimate
  // would be off by 35 us; the first (rtt 10) is exact.
  const double offset = -250;
  std::vector<ClockSample> s = {
      {0, 5 + offset, 10},
      {100, 105 + offset, 180},
      {200, 230 + offset, 240},  // delayed on the way out: rtt 40
  };
  ClockEstimate e = estimate_offset(s);
  EXPECT_DOUBLE_EQ(e.rtt_us, 10);
  EXPECT_DOUBLE_EQ(e.offset_us, offset);
}

TEST(Clock, ErrorBoundedByHalfRoundTrip) {
  // Asymmetric path (2 us out, 18 us back): error is 8 us, within rtt/2 = 10 us.
  std::vector<ClockSample> s = {{0, 2 + 500.0, 20}};
  ClockEstimate e = estimate_offset(s);
  EXPECT_NEAR(e.offset_us, 500, e.rtt_us / 2);
  EXPECT_DOUBLE_EQ(e.offset_us, 492);
}

TEST(Clock, EmptyIsAnError) {
  EXPECT_THROW(estimate_offset({}), InternalError);
}

#include <cmath>

#include "runtime/progress.hpp"

TEST(Progress, APlannedPhaseWeighsTheStepsLeftByTheirEstimates) {
  Progress p("devices", 3, /*enabled=*/false);
  // No plan: steps counted, nothing known before the first.
  EXPECT_TRUE(std::isnan(p.estimate_left(0, 0.0)));
  EXPECT_DOUBLE_EQ(p.estimate_left(1, 2.0), 4.0);
  p.plan({1.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(p.estimate_left(0, 0.5), 6.0);  // the estimate as it stands
  // Step 1 took 2 s against its 1 s: the steps left (5 s planned) are taken at that pace.
  EXPECT_DOUBLE_EQ(p.estimate_left(1, 2.0), 10.0);
  EXPECT_DOUBLE_EQ(p.estimate_left(2, 1.5), 1.5);
  EXPECT_DOUBLE_EQ(p.estimate_left(3, 9.0), 0.0);
  // A step not estimated, or a plan of another length: counted again.
  p.plan({1.0, std::nan(""), 3.0});
  EXPECT_DOUBLE_EQ(p.estimate_left(1, 2.0), 4.0);
  p.plan({1.0, 2.0});
  EXPECT_DOUBLE_EQ(p.estimate_left(1, 2.0), 4.0);
}

TEST(Progress, EtaReadsLikeAPerson) {
  EXPECT_EQ(Progress::format_eta(12.4), "12 s");
  EXPECT_EQ(Progress::format_eta(185), "3 min 5 s");
  EXPECT_EQ(Progress::format_eta(3720), "1 h 2 min");
  EXPECT_EQ(Progress::format_eta(-1), "?");
  EXPECT_EQ(Progress::format_eta(std::nan("")), "?");
}
