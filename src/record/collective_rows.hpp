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

// A size's identity and statistics, as the per-size [S] datasets store them.
struct CollectiveSizeStats {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;   // elements per rank
  std::int64_t skipped = 0;  // schema::kColl* code
  // Over iterations, each lasting until its last rank is done (set_iteration_stats).
  double time_med_us = 0, time_p5_us = 0, time_p95_us = 0;
  double algbw_GBps = 0, busbw_GBps = 0;
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
// One size's gather in flight: the constructor starts it on every rank of `comm` (MPI_Igather;
// every rank passes the same number of samples, and the ranks' results are copied, so `mine` may
// go), finish() completes it (MPI_Wait) and returns every rank's result on `root`, empty
// elsewhere. The ranks go on to the next size while rank 0 collects this one: a small result is
// sent eagerly, so it reaches rank 0 also when its sender then stops. A gather destroyed in flight
// (unwinding) is waited for first, since MPI writes into its buffers until it completes.
class SizeGather {
 public:
  SizeGather(MPI_Comm comm, int root, const CollectiveRankResult& mine);
  SizeGather(const SizeGather&) = delete;
  SizeGather& operator=(const SizeGather&) = delete;
  ~SizeGather();
  GatheredSize finish();

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::size_t iters_ = 0, world_ = 0;
  bool root_ = false;
  std::vector<double> packed_, all_;
};

// The same, started and finished at once (one blocking step).
GatheredSize gather_collective_size(MPI_Comm comm, int root, const CollectiveRankResult& mine);

// The median, 5th and 95th percentile iteration of `g` into `stats` (bandwidths are the
// caller's: they need the collective's byte count and bus factor).
void set_iteration_stats(CollectiveSizeStats& stats, const GatheredSize& g);

// Appends the size to the sweep at `path`, keeping only the columns of `ranks` (the world ranks
// that take part, as the sweep's `ranks` dataset lists them, ascending): samples as float32 us,
// arrivals relative to each iteration's earliest (kept as float64 in arrival_base_us). All of it
// in one batch (one flush of the file). InternalError when g's vectors do not match its iters
// and world, or a rank in `ranks` is outside the world.
void append_collective_size(RunWriter& w, const std::string& path,
                            std::span<const std::int64_t> ranks, const CollectiveSizeStats& stats,
                            const GatheredSize& g);

}  // namespace shakedown
