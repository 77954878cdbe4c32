// Harness overhead: shakedown's timed loop (MpiComm + timed_loop, exactly what the collectives
// phase runs) against a bare MPI_Barrier + MPI_Allreduce loop in the same process, same sizes,
// same iterations, float32 sum out of place. Rounds alternate between the two so drift and
// noise hit both alike. Per size: median over iterations of the slowest rank's time, for each;
// the ratio of the medians and the absolute difference.
//
// Run: scripts/mpirun-local.sh -n 4 build/bench/bench_allreduce_overhead [iters] [max_bytes]
// Targets (issue 3): ratio <= 1.03 for sizes >= 64 KiB, <= 0.5 us extra for small messages.
#include <mpi.h>
#include <atomic>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "comm/timed_loop.hpp"
#include "core/stats.hpp"
#include "runtime/clock.hpp"

using namespace shakedown;

namespace {

// Bare baseline: the loop a user would write by hand.
void bare_loop(const float* send, float* recv, int count, int iters, double* time_us) {
  for (int it = 0; it < iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_us();
    MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    time_us[it] = now_us() - t0;
  }
}

// Per-iteration max over ranks, then the median over iterations (on every rank).
double median_of_max(std::vector<double>& t) {
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::uint64_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (4u << 20);
  const int rounds = 5;
  MpiComm comm(MPI_COMM_WORLD);
  const int rank = comm.rank();
  if (rank == 0) {
    std::printf(
        "# harness overhead: %d ranks, %d iterations x %d alternating rounds, float32 sum\n",
        comm.size(), iters, rounds);
    std::printf("%12s %12s %12s %10s %12s\n", "bytes", "bare_us", "harness_us", "ratio",
                "extra_us");
  }
  for (std::uint64_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    const auto count = static_cast<int>(bytes / 4 > 0 ? bytes / 4 : 1);
    std::vector<float> send(static_cast<std::size_t>(count), 1.0f),
        recv(static_cast<std::size_t>(count));
    std::vector<double> bare_all, ours_all, t(static_cast<std::size_t>(iters)),
        a(static_cast<std::size_t>(iters)), w(static_cast<std::size_t>(iters));
    std::atomic<std::int64_t> done{0};  // the watchdog's progress count, as in the phase
    // Warm both paths (connections, buffers) before timing.
    bare_loop(send.data(), recv.data(), count, 5, t.data());
    for (int r = 0; r < rounds; ++r) {
      bare_loop(send.data(), recv.data(), count, iters, t.data());
      bare_all.push_back(median_of_max(t));
      timed_loop(comm,
                 {CollectiveKind::kAllReduce, send.data(), recv.data(),
                  static_cast<std::uint64_t>(count), DType::kFloat32, ReduceOp::kSum, 0},
                 iters, 0.0, t.data(), a.data(), w.data(), &done);
      ours_all.push_back(median_of_max(t));
    }
    const double bare = median(bare_all);
    const double ours = median(ours_all);
    if (rank == 0) {
      std::printf("%12llu %12.2f %12.2f %10.3f %12.2f\n", static_cast<unsigned long long>(bytes),
                  bare, ours, ours / bare, ours - bare);
    }
  }
  return 0;
}
