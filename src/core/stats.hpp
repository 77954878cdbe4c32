#pragma once
// Robust statistics (docs/architecture.md "Timing and the verdict"): median, percentiles, MAD. NaN
// entries (iterations or ranks that did not take part) are ignored; an all-NaN input gives NaN.
#include <span>

namespace shakedown {

// Linear interpolation between closest ranks; q in [0, 1].
double percentile(std::span<const double> values, double q);
inline double median(std::span<const double> values) {
  return percentile(values, 0.5);
}
// Median absolute deviation from the median (unscaled).
double mad(std::span<const double> values);

}  // namespace shakedown
