#include "runtime/clock.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "runtime/mpi.hpp"

namespace shakedown {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

ClockEstimate estimate_offset(std::span<const ClockSample> samples) {
  if (samples.empty()) throw InternalError("estimate_offset: no clock samples");
  auto best = std::min_element(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
    return (a.t_recv - a.t_send) < (b.t_recv - b.t_send);
  });
  ClockEstimate e;
  e.rtt_us = best->t_recv - best->t_send;
  e.offset_us = best->t_remote - 0.5 * (best->t_send + best->t_recv);
  return e;
}

std::vector<ClockEstimate> sync_clocks(MPI_Comm comm, int rounds) {
  constexpr int kTag = 7301;
  const int rank = comm_rank(comm);
  const int n = comm_size(comm);
  rounds = std::max(rounds, 1);
  std::vector<double> flat(static_cast<std::size_t>(2 * n), 0.0);
  if (rank == 0) {
    std::vector<ClockSample> samples(static_cast<std::size_t>(rounds));
    for (int peer = 1; peer < n; ++peer) {
      for (auto& s : samples) {
        double ping = 0;
        s.t_send = now_us();
        SD_MPI_CHECK(MPI_Send(&ping, 1, MPI_DOUBLE, peer, kTag, comm));
        SD_MPI_CHECK(MPI_Recv(&s.t_remote, 1, MPI_DOUBLE, peer, kTag, comm, MPI_STATUS_IGNORE));
        s.t_recv = now_us();
      }
      ClockEstimate e = estimate_offset(samples);
      flat[static_cast<std::size_t>(2 * peer)] = e.offset_us;
      flat[static_cast<std::size_t>(2 * peer + 1)] = e.rtt_us;
    }
  } else {
    for (int i = 0; i < rounds; ++i) {
      double ping = 0;
      SD_MPI_CHECK(MPI_Recv(&ping, 1, MPI_DOUBLE, 0, kTag, comm, MPI_STATUS_IGNORE));
      double t = now_us();
      SD_MPI_CHECK(MPI_Send(&t, 1, MPI_DOUBLE, 0, kTag, comm));
    }
  }
  SD_MPI_CHECK(MPI_Bcast(flat.data(), 2 * n, MPI_DOUBLE, 0, comm));
  std::vector<ClockEstimate> out(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = {flat[2 * r], flat[2 * r + 1]};
  return out;
}

}  // namespace shakedown
