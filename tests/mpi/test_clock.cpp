// Clock sync between real ranks. On one host every rank reads the same monotonic clock, so the
// true offset is 0 and the estimate must lie within half the round trip it was taken from.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/clock.hpp"
#include "runtime/mpi.hpp"

using namespace shakedown;

TEST(ClockSync, OffsetsWithinHalfRoundTripOnOneHost) {
  std::vector<ClockEstimate> c = sync_clocks(MPI_COMM_WORLD, 20);
  ASSERT_EQ(static_cast<int>(c.size()), comm_size(MPI_COMM_WORLD));
  EXPECT_EQ(c[0].offset_us, 0);
  for (std::size_t r = 1; r < c.size(); ++r) {
    EXPECT_GT(c[r].rtt_us, 0) << "rank " << r;
    EXPECT_LE(std::fabs(c[r].offset_us), c[r].rtt_us / 2 + 1e-6) << "rank " << r;
  }
  // Every rank received the same vector.
  double sum = 0;
  for (const auto& e : c) sum += e.offset_us + e.rtt_us;
  double lo = sum, hi = sum;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}
