#include "comm/timed_loop.hpp"

#include "runtime/clock.hpp"

namespace shakedown {

void timed_loop(Comm& comm, const TimedCall& c, int iters, double clock_offset_us, double* time_us,
                double* arrival_us, double* wait_us, std::atomic<std::int64_t>* done) {
  for (int it = 0; it < iters; ++it) {
    const double ready = now_us();
    comm.barrier();
    const double t0 = now_us();
    comm.run(c.kind, c.send, c.recv, c.unit, c.dtype, c.op, c.root);
    comm.synchronize();
    const double t1 = now_us();
    arrival_us[it] = ready - clock_offset_us;
    wait_us[it] = t0 - ready;
    time_us[it] = t1 - t0;
    if (done != nullptr) done->store(it + 1, std::memory_order_relaxed);
  }
}

}  // namespace shakedown
