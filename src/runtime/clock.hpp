#pragma once
// Clock offsets of every rank against rank 0, so arrival times can be compared across ranks.
#include <span>
#include <vector>

#include <mpi.h>

namespace shakedown {

// Monotonic time in microseconds. All timings and arrival stamps use this clock.
double now_us();

// One ping-pong: rank 0 stamps t_send, the peer stamps t_remote on its own clock, rank 0 stamps
// t_recv when the answer arrives.
struct ClockSample {
  double t_send = 0, t_remote = 0, t_recv = 0;
};

struct ClockEstimate {
  double offset_us = 0;  // peer clock minus rank 0 clock; aligned time = local time - offset
  double rtt_us = 0;     // round trip of the sample used: the offset is good to +-rtt/2
};

// Keeps the sample with the smallest round trip (least queueing), assuming a symmetric path.
// Throws InternalError on an empty span.
ClockEstimate estimate_offset(std::span<const ClockSample> samples);

// Collective over `comm`: rank 0 ping-pongs `rounds` times with every other rank in turn. Every
// rank gets the full vector (index = rank; rank 0's entry is {0, 0}).
std::vector<ClockEstimate> sync_clocks(MPI_Comm comm, int rounds);

}  // namespace shakedown
