#pragma once
// The timed loop of the collectives sweep (DESIGN.md "Timing and imbalance"), kept apart so the
// overhead benchmark measures exactly the code the phase runs. Per iteration: barrier, stamp the
// (clock-aligned) arrival, run, wait for completion, stamp. Nothing else happens between the
// stamps: no allocation, no logging, no branch but the iteration count.
#include <atomic>
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
// `clock_offset_us`) to arrival_us. `done`, when given, counts the finished iterations after
// each stamp (a relaxed store: the watchdog reads it to tell a slow step from a hung one).
void timed_loop(Comm& comm, const TimedCall& call, int iters, double clock_offset_us,
                double* time_us, double* arrival_us, std::atomic<std::int64_t>* done = nullptr);

}  // namespace shakedown
