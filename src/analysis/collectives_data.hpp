#pragma once
// The collectives phase as recorded, read once for the checks and the reporters: every sweep
// (scope, collective, dtype/reduction, mode) with its per-size statistics and per-rank wrong
// counts, and the scopes that could not run.
#include <cstdint>
#include <string>
#include <vector>

#include <map>

#include "record/reader.hpp"
#include "record/schema.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

struct SweepData {
  std::string path;         // the sweep's group in the file
  std::string scope;        // world, intra_node, inter_node, rail_<L>
  std::string op;           // all_reduce ...
  std::string leaf;         // float32_sum, float32 ...
  std::string mode;         // out_of_place | in_place
  std::string unsupported;  // non-empty: not run, and why
  int nranks = 0;           // ranks in one instance of the scope
  double busbw_factor = 0;
  double link_GBps = 0;              // configured rate of the path, 0 unknown
  std::size_t world = 0;             // ranks in the run: the width of wrong and first_wrong
  std::vector<std::size_t> columns;  // the world rank of each column of the per-rank datasets
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint64_t> count;   // elements per rank (empty in files that lack it)
  std::vector<std::int64_t> skipped;  // schema::kColl* codes
  std::vector<double> time_med_us, time_p95_us, algbw, busbw;
  std::vector<std::int64_t> wrong;  // [S, world]
  std::vector<std::int64_t> first_wrong;

  std::size_t measured() const;  // sizes with timings
  // The largest / smallest size with timings, or -1.
  long largest() const;
  long smallest() const;
};

struct CollectivesData {
  bool ran = false;  // the file has /collectives
  std::string backend;
  std::vector<SweepData> sweeps;                                    // in file order
  std::vector<std::pair<std::string, std::string>> skipped_scopes;  // scope, why
  std::uint64_t wrong_total = 0;
  std::vector<std::string> unreadable;  // sweeps a failed write left half written, and why
};

CollectivesData read_collectives(const RunFile& file);

// The string attribute `name` of `path`, "" when it is absent.
std::string attr_or(const RunFile& file, const std::string& path, const char* name);

// Per-iteration samples [iters, world] of one size of a sweep (NaN for ranks without a column),
// read for that size alone. Arrivals are relative to a per-iteration origin (schema 3: the
// earliest; older files: rank 0's clock): use their differences within an iteration.
std::vector<double> read_size_samples(const RunFile& file, const SweepData& sweep,
                                      const schema::Dataset<float>& d, std::size_t size,
                                      std::size_t* iters);
// The same for every size at once, [S, iters, world] (*sizes gets S): one read per sweep.
std::vector<double> read_sweep_samples(const RunFile& file, const SweepData& sweep,
                                       const schema::Dataset<float>& d, std::size_t* iters,
                                       std::size_t* sizes);
// Per-iteration times [iters, world] of one size of a sweep (for per-node and per-rank views).
std::vector<double> read_size_times(const RunFile& file, const SweepData& sweep, std::size_t size,
                                    std::size_t* iters);

// Each node's own busbw in one size of an intra_node sweep: per iteration the slowest of the
// node's ranks, the median over iterations, as GB/s (node index -> busbw). Nodes with fewer than
// two ranks in the sweep are left out; nothing when the size has no per-rank times.
std::map<int, double> node_busbw(const RunFile& file, const SweepData& sweep, std::size_t size,
                                 const std::vector<RankInfo>& ranks);

}  // namespace shakedown
