#pragma once
// The timed loop of the collectives sweep (DESIGN.md "Timing and imbalance"), kept apart so the
// overhead benchmark measures exactly the code the phase runs. Per iteration: barrier, stamp the
// (clock-aligned) arrival, run, wait for completion, stamp. Nothing else happens between the
// stamps: no allocation, no logging, no branch but the iteration count.
#include <cstdint>

#include "comm/comm.hpp"

namespace shakedown {

struct TimedCall {
  CollectiveKind kind;
  const void* send;
  void* recv;
  std::uint64_t unit;
  DType dtype;
  ReduceOp op;
  int root;
};

// Writes `iters` durations (us) to time_us and arrival stamps (us, local clock minus
// `clock_offset_us`) to arrival_us.
void timed_loop(Comm& comm, const TimedCall& call, int iters, double clock_offset_us,
                double* time_us, double* arrival_us);

}  // namespace shakedown
