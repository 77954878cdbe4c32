// Harness overhead: shakedown's timed loop (MpiComm + timed_loop, exactly what the collectives
// phase runs, beside a live watchdog, with MPI set up as shakedown sets it up) against a bare
// MPI_Barrier + MPI_Allreduce loop in a separate process started with plain MPI_Init. One process
// runs one mode and prints, per size, the median over iterations of the slowest rank's time in
// us; bench/overhead.sh alternates the modes over several launches and prints the ratios.
//
//   bench_allreduce_overhead bare|funneled|multiple|harness [iters] [max_bytes]
//
// bare: MPI_Init, the loop a user would write by hand. funneled, multiple: the same loop after
// MPI_Init_thread at that level (what Open MPI's internal locking costs: it is on for any level
// above MPI_THREAD_SINGLE). harness: MpiEnvironment (as shakedown runs: MPI_THREAD_SINGLE unless
// SHAKEDOWN_MPI_THREAD says otherwise), a Watchdog (1 s heartbeats, 50 ms polls, its own TCP
// channel) and the collectives phase's timed loop, one watchdog step per size.
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "comm/timed_loop.hpp"
#include "core/stats.hpp"
#include "runtime/clock.hpp"
#include "runtime/watchdog.hpp"

using namespace shakedown;

namespace {

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

int usage() {
  std::fprintf(
      stderr,
      "usage: bench_allreduce_overhead bare|funneled|multiple|harness [iters] [max_bytes]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  if (mode != "bare" && mode != "funneled" && mode != "multiple" && mode != "harness") {
    return usage();
  }
  const int iters = argc > 2 ? std::atoi(argv[2]) : 200;
  const std::uint64_t max_bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (4u << 20);
  std::unique_ptr<MpiEnvironment> environment;
  if (mode == "bare") {
    MPI_Init(&argc, &argv);
  } else if (mode == "funneled") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  } else if (mode == "multiple") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    environment = std::make_unique<MpiEnvironment>(&argc, &argv);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<MpiComm> comm;
  if (mode == "harness") {
    std::vector<std::string> names;
    for (int r = 0; r < size; ++r) names.push_back("rank " + std::to_string(r));
    watchdog = std::make_unique<Watchdog>(MPI_COMM_WORLD, Watchdog::Options(), names, nullptr);
    comm = std::make_unique<MpiComm>(MPI_COMM_WORLD);
  }
  int level = 0;
  MPI_Query_thread(&level);
  if (rank == 0) {
    std::printf("# %s: %d ranks, %d iterations, MPI thread level %d, float32 sum\n", mode.c_str(),
                size, iters, level);
  }
  for (std::uint64_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    const auto count = static_cast<int>(bytes / 4 > 0 ? bytes / 4 : 1);
    std::vector<float> send(static_cast<std::size_t>(count), 1.0f),
        recv(static_cast<std::size_t>(count));
    std::vector<double> t(static_cast<std::size_t>(iters)), a(t.size()), w(t.size());
    if (comm) {
      if (watchdog) watchdog->step("all_reduce " + std::to_string(bytes) + " B");
      const TimedCall call{CollectiveKind::kAllReduce,
                           send.data(),
                           recv.data(),
                           static_cast<std::uint64_t>(count),
                           DType::kFloat32,
                           ReduceOp::kSum,
                           0};
      timed_loop(*comm, call, 10, 0.0, t.data(), a.data(), w.data(),
                 watchdog ? &watchdog->progress() : nullptr);
      timed_loop(*comm, call, iters, 0.0, t.data(), a.data(), w.data(),
                 watchdog ? &watchdog->progress() : nullptr);
    } else {
      bare_loop(send.data(), recv.data(), count, 10, t.data());
      bare_loop(send.data(), recv.data(), count, iters, t.data());
    }
    const double us = median_of_max(t);
    if (rank == 0) {
      std::printf("%llu %.4f\n", static_cast<unsigned long long>(bytes), us);
    }
  }
  if (watchdog) watchdog->stop();
  watchdog.reset();
  comm.reset();
  if (!environment) MPI_Finalize();
  return 0;
}
