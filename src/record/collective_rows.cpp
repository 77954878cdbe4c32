#include "record/collective_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "record/precision.hpp"
#include "record/schema.hpp"
#include "runtime/mpi.hpp"

#include <bit>

namespace shakedown {

namespace {

// Samples keep kSampleBits significant bits (round to nearest): a relative error of at most
// 2^-kSampleBits (0.024%), far below the run-to-run noise of any collective and of the same
// order as the clock's resolution on the fastest ones; the zeroed low bits cost deflate almost
// nothing, which halves the file. Arrivals and barrier waits are also rounded to 1/64 us: they
// are offsets between clocks that agree to about half a ping-pong (a microsecond or more).
constexpr int kSampleBits = 12;
constexpr double kOffsetStepUs = 1.0 / 64;

float round_significant(double x) {
  return shakedown::round_significant(x, kSampleBits);
}

float round_offset(double x) {
  if (!std::isfinite(x)) return static_cast<float>(x);
  return round_significant(std::nearbyint(x / kOffsetStepUs) * kOffsetStepUs);
}

}  // namespace

SizeGather::SizeGather(MPI_Comm comm, int root, const CollectiveRankResult& mine) {
  int rank = 0, size = 0;
  SD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SD_MPI_CHECK(MPI_Comm_size(comm, &size));
  iters_ = mine.time_us.size();
  world_ = static_cast<std::size_t>(size);
  root_ = rank == root;
  if (mine.arrival_us.size() != iters_ || mine.wait_us.size() != iters_) {
    throw InternalError("SizeGather: time, arrival and wait differ in length");
  }
  // [time x iters, arrival x iters, wait x iters, wrong, first_wrong, expected, got]
  const std::size_t per = 3 * iters_ + 4;
  packed_.resize(per);
  std::copy(mine.time_us.begin(), mine.time_us.end(), packed_.begin());
  std::copy(mine.arrival_us.begin(), mine.arrival_us.end(), packed_.begin() + iters_);
  std::copy(mine.wait_us.begin(), mine.wait_us.end(), packed_.begin() + 2 * iters_);
  packed_[3 * iters_] = mine.wrong;
  packed_[3 * iters_ + 1] = mine.first_wrong;
  packed_[3 * iters_ + 2] = mine.expected;
  packed_[3 * iters_ + 3] = mine.got;
  if (root_) all_.assign(per * world_, 0.0);
  SD_MPI_CHECK(MPI_Igather(packed_.data(), static_cast<int>(per), MPI_DOUBLE, all_.data(),
                           static_cast<int>(per), MPI_DOUBLE, root, comm, &request_));
}

SizeGather::~SizeGather() {
  if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

GatheredSize SizeGather::finish() {
  if (request_ != MPI_REQUEST_NULL) SD_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  GatheredSize out;
  if (!root_) return out;
  const std::size_t iters = iters_;
  const std::size_t world = world_;
  const std::size_t per = 3 * iters + 4;
  out.iters = iters;
  out.world = world;
  out.time_us.resize(iters * world);
  out.arrival_us.resize(iters * world);
  out.wait_us.resize(iters * world);
  out.wrong.resize(world);
  out.first_wrong.resize(world);
  out.expected.resize(world);
  out.got.resize(world);
  for (std::size_t r = 0; r < world; ++r) {
    const double* p = &all_[r * per];
    for (std::size_t i = 0; i < iters; ++i) {  // transposed to [iters, world]
      out.time_us[i * world + r] = p[i];
      out.arrival_us[i * world + r] = p[iters + i];
      out.wait_us[i * world + r] = p[2 * iters + i];
    }
    out.wrong[r] = static_cast<std::int64_t>(p[3 * iters]);
    out.first_wrong[r] = static_cast<std::int64_t>(p[3 * iters + 1]);
    out.expected[r] = p[3 * iters + 2];
    out.got[r] = p[3 * iters + 3];
  }
  return out;
}

GatheredSize gather_collective_size(MPI_Comm comm, int root, const CollectiveRankResult& mine) {
  return SizeGather(comm, root, mine).finish();
}

void write_collective_header(RunWriter& w, const std::string& path, const CollectiveSweepHeader& h,
                             std::span<const std::int64_t> ranks) {
  namespace c = schema::coll;
  w.batch([&] {
    w.write_array(path, c::kRanks, ranks, {ranks.size()});
    w.set_attr(path, c::kAttrScope, h.scope);
    w.set_attr(path, c::kAttrCollective, h.collective);
    w.set_attr(path, c::kAttrDtype, h.dtype);
    w.set_attr(path, c::kAttrReduceOp, h.reduce_op);
    w.set_attr(path, c::kAttrInPlace, h.in_place ? 1 : 0);
    w.set_attr(path, c::kAttrNranks, h.nranks);
    w.set_attr(path, c::kAttrBusbwFactor, h.busbw_factor);
    w.set_attr(path, c::kAttrLinkGBps, h.link_GBps);
    w.set_attr(path, c::kAttrPlannedSizes, h.planned_sizes);
  });
}

void set_iteration_stats(CollectiveSizeStats& stats, const GatheredSize& g) {
  const std::vector<double> duration = iteration_durations(g.time_us, g.world);
  stats.time_med_us = median(duration);
  stats.time_p5_us = percentile(duration, 0.05);
  stats.time_p95_us = percentile(duration, 0.95);
}

void append_collective_size(RunWriter& w, const std::string& path,
                            std::span<const std::int64_t> ranks, const CollectiveSizeStats& stats,
                            const GatheredSize& row) {
  const std::size_t iters = row.iters;
  const std::size_t world = row.world;
  const std::size_t n = ranks.size();
  const auto where = [&] { return "collectives row of '" + path + "'"; };
  for (std::span<const double> s :
       {std::span<const double>(row.time_us), std::span<const double>(row.arrival_us),
        std::span<const double>(row.wait_us)}) {
    if (s.size() != iters * world) {
      throw InternalError(where() + ": " + std::to_string(s.size()) + " samples, not " +
                          std::to_string(iters) + " iterations x " + std::to_string(world) +
                          " ranks");
    }
  }
  if (row.wrong.size() != world || row.first_wrong.size() != world) {
    throw InternalError(where() + ": wrong and first_wrong need one value per rank");
  }
  for (std::int64_t r : ranks) {
    if (r < 0 || static_cast<std::size_t>(r) >= world) {
      throw InternalError(where() + ": column rank " + std::to_string(r) + " outside the world");
    }
  }
  std::vector<float> time(iters * n), arrival(iters * n), wait(iters * n);
  std::vector<double> base(iters, kNaN);
  for (std::size_t i = 0; i < iters; ++i) {
    const double* a = &row.arrival_us[i * world];
    double earliest = kNaN;
    for (std::int64_t r : ranks) {
      const double v = a[r];
      if (std::isfinite(v) && !(v >= earliest)) earliest = v;
    }
    base[i] = earliest;
    for (std::size_t c = 0; c < n; ++c) {
      const auto r = static_cast<std::size_t>(ranks[c]);
      time[i * n + c] = round_significant(row.time_us[i * world + r]);
      wait[i * n + c] = round_offset(row.wait_us[i * world + r]);
      arrival[i * n + c] = round_offset(a[r] - earliest);  // NaN stays NaN
    }
  }
  std::vector<std::int64_t> wrong(n), first(n);
  for (std::size_t c = 0; c < n; ++c) {
    wrong[c] = row.wrong[static_cast<std::size_t>(ranks[c])];
    first[c] = row.first_wrong[static_cast<std::size_t>(ranks[c])];
  }
  w.batch([&] {
    namespace c = schema::coll;
    const std::uint64_t i64 = iters, n64 = n;
    w.append_rows(path, c::kSizes, std::span<const std::uint64_t>(&stats.bytes, 1), {});
    w.append_rows(path, c::kCount, std::span<const std::uint64_t>(&stats.count, 1), {});
    w.append_rows(path, c::kSkipped, std::span<const std::int64_t>(&stats.skipped, 1), {});
    w.append_rows(path, c::kTimeUs, time, {i64, n64});
    w.append_rows(path, c::kArrivalUs, arrival, {i64, n64});
    w.append_rows(path, c::kArrivalBaseUs, base, {i64});
    w.append_rows(path, c::kWaitUs, wait, {i64, n64});
    w.append_rows(path, c::kWrong, wrong, {n64});
    w.append_rows(path, c::kFirstWrong, first, {n64});
    w.append_rows(path, c::kTimeMedUs, std::span<const double>(&stats.time_med_us, 1), {});
    w.append_rows(path, c::kTimeP5Us, std::span<const double>(&stats.time_p5_us, 1), {});
    w.append_rows(path, c::kTimeP95Us, std::span<const double>(&stats.time_p95_us, 1), {});
    w.append_rows(path, c::kAlgbwGBps, std::span<const double>(&stats.algbw_GBps, 1), {});
    w.append_rows(path, c::kBusbwGBps, std::span<const double>(&stats.busbw_GBps, 1), {});
  });
}

}  // namespace shakedown
