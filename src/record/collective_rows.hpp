#pragma once
// One message size of a collectives sweep as rank 0 stores it (schema.hpp /collectives/...): the
// one place that turns the gathered [iters, world] samples into the file's layout, used by the
// collectives phase and by the scale generator (bench/gen_runfile.cpp), so both write the same.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "record/writer.hpp"

namespace shakedown {

// A sweep's attributes (schema.hpp coll::kAttr*) and its columns, written before its first size.
struct CollectiveSweepHeader {
  std::string scope, collective, dtype, reduce_op;  // reduce_op "" when it does not reduce
  bool in_place = false;
  int nranks = 0;  // ranks in one instance of the scope
  double busbw_factor = 0, link_GBps = 0;
  std::int64_t planned_sizes = 0;
};
// Writes the header and the `ranks` dataset (the world ranks that take part, ascending) of the
// sweep at `path`, in one batch.
void write_collective_header(RunWriter& w, const std::string& path, const CollectiveSweepHeader& h,
                             std::span<const std::int64_t> ranks);

// What rank 0 holds for one size after the gather: every world rank's samples [iters, world]
// (row-major, NaN where a rank did not run), and its check result [world].
struct CollectiveSizeRow {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;   // elements per rank
  std::int64_t skipped = 0;  // schema::kColl* code
  std::uint64_t iters = 0;
  std::span<const double> time_us, arrival_us, wait_us;  // [iters, world]
  std::span<const std::int64_t> wrong, first_wrong;      // [world]
  double time_med_us = 0, time_p5_us = 0, time_p95_us = 0, algbw_GBps = 0, busbw_GBps = 0;
};

// One rank's result for one size: its samples (one per timed iteration, NaN where not run) and
// its output check.
struct CollectiveRankResult {
  std::span<const double> time_us, arrival_us, wait_us;
  double wrong = 0, first_wrong = -1, expected = 0, got = 0;
};
// Every rank's result on the root, [iters, world] and [world].
struct GatheredSize {
  std::size_t iters = 0, world = 0;
  std::vector<double> time_us, arrival_us, wait_us;
  std::vector<std::int64_t> wrong, first_wrong;
  std::vector<double> expected, got;
};
// Collective over `comm` (every rank passes the same number of samples): one MPI_Gather brings
// every rank's result to `root`; empty elsewhere.
GatheredSize gather_collective_size(MPI_Comm comm, int root, const CollectiveRankResult& mine);

// Appends the size to the sweep at `path`, keeping only the columns of `ranks` (the world ranks
// that take part, as the sweep's `ranks` dataset lists them, ascending): samples as float32 us,
// arrivals relative to each iteration's earliest (kept as float64 in arrival_base_us). All of it
// in one batch (one open, flush and close of the file). InternalError when a span's length does
// not match iters and the world (the largest rank in `ranks` + 1 at least).
void append_collective_size(RunWriter& w, const std::string& path,
                            std::span<const std::int64_t> ranks, const CollectiveSizeRow& row);

}  // namespace shakedown
