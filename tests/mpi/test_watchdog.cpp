// The watchdog's normal path under real MPI: many quick steps and barriers, a clean stop, and no
// false alarm. (The alarm itself ends the job, so it is tested end to end with --inject stall.)
#include <gtest/gtest.h>

#include "runtime/watchdog.hpp"

using namespace shakedown;

TEST(WatchdogMpi, QuickStepsNeverTrip) {
  const int n = comm_size(MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) names.push_back("rank " + std::to_string(r));
  bool tripped = false;
  {
    Watchdog wd(MPI_COMM_WORLD, {.step_timeout_s = 5, .run_timeout_s = 60, .poll_s = 0.005}, names,
                [&](const std::string&) { tripped = true; });
    for (int i = 0; i < 50; ++i) {
      wd.step("step " + std::to_string(i));
      wd.barrier(MPI_COMM_WORLD, "after step " + std::to_string(i));
    }
    wd.stop();
  }
  EXPECT_FALSE(tripped);
}
