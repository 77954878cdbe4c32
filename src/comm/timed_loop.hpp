#pragma once
// The timed loop of the collectives sweep (docs/architecture.md "Timing and the verdict"), kept
// apart so the overhead benchmark measures exactly the code the phase runs. Per iteration: stamp
// the arrival (when this rank is ready for the iteration; clock-aligned), barrier, stamp, run, wait
// for completion, stamp. The arrival is stamped BEFORE the barrier: after it, every rank would
// record the barrier's release instead, and a late rank would look punctual. Nothing else
// happens between the stamps: no allocation, no logging, no branch but the iteration count.
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

// Per iteration: the collective's duration from the barrier's release to completion (time_us),
// the arrival stamp before the barrier (arrival_us: local clock minus `clock_offset_us`, so
// comparable across ranks) and the time spent in the barrier (wait_us), all in us. `done`, when
// given, counts the finished iterations after each stamp (a relaxed store: the watchdog reads
// it to tell a slow step from a hung one).
void timed_loop(Comm& comm, const TimedCall& call, int iters, double clock_offset_us,
                double* time_us, double* arrival_us, double* wait_us,
                std::atomic<std::int64_t>* done = nullptr);

}  // namespace shakedown
