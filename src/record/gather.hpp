#pragma once
// The one gather path for per-iteration samples: every rank's values for one step (one value
// per timed iteration) to rank 0, transposed to [iters, world] row-major, the layout of every
// per-iteration dataset in the run file (schema.hpp: time_us, arrival_us, wait_us, tflops...).
#include <mpi.h>

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "runtime/mpi.hpp"

namespace shakedown {

template <class T>
MPI_Datatype mpi_type_of() {
  if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return MPI_INT64_T;
  } else {
    static_assert(std::is_same_v<T, std::uint64_t>, "samples are double, int64 or uint64");
    return MPI_UINT64_T;
  }
}

// Collective over `comm`: every rank passes the same number of samples (the step's iteration
// count, agreed from the configuration). Returns [iters, world] on `root`, empty elsewhere.
template <class T>
std::vector<T> gather_rows(MPI_Comm comm, int root, std::span<const T> mine) {
  int rank = 0, world = 0;
  SD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SD_MPI_CHECK(MPI_Comm_size(comm, &world));
  const auto iters = mine.size();
  // assign, not a sized constructor: GCC 12 at -O3 reports a false null dereference in the
  // default-construction (-Wnull-dereference), and the Release build treats it as an error.
  std::vector<T> by_rank;
  if (rank == root) by_rank.assign(iters * static_cast<std::size_t>(world), T{});
  SD_MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(iters), mpi_type_of<T>(), by_rank.data(),
                          static_cast<int>(iters), mpi_type_of<T>(), root, comm));
  if (rank != root) return {};
  std::vector<T> rows;
  rows.assign(by_rank.size(), T{});
  const auto w = static_cast<std::size_t>(world);
  for (std::size_t r = 0; r < w; ++r) {
    for (std::size_t i = 0; i < iters; ++i) rows[i * w + r] = by_rank[r * iters + i];
  }
  return rows;
}

}  // namespace shakedown
