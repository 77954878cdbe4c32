#pragma once
// Robust statistics (docs/architecture.md "Timing and the verdict"): median, percentiles, MAD. NaN
// entries (iterations or ranks that did not take part) are ignored; an all-NaN input gives NaN.
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace shakedown {

// A value that was not measured, in memory and in the file.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Linear interpolation between closest ranks; q in [0, 1].
double percentile(std::span<const double> values, double q);
// The same for values already sorted, without NaN (no copy, no sort).
double percentile_of_sorted(std::span<const double> sorted, double q);
inline double median(std::span<const double> values) {
  return percentile(values, 0.5);
}
// Median absolute deviation from the median (unscaled).
double mad(std::span<const double> values);

// Per iteration of per-rank samples [iters, world] (row-major), the largest over `columns` (every
// rank when empty): an iteration lasts until its last rank is done. NaN entries are ignored; an
// iteration with none gives NaN.
std::vector<double> iteration_durations(std::span<const double> rows, std::size_t world,
                                        std::span<const std::size_t> columns = {});

// The same samples [iters, world]: per iteration the median over the ranks (the median rank's
// time), and per rank the median over its iterations. NaN entries are ignored; a row or column
// with none gives NaN.
std::vector<double> row_medians(std::span<const double> rows, std::size_t world);
std::vector<double> column_medians(std::span<const double> rows, std::size_t world);

}  // namespace shakedown
