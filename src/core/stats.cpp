#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace shakedown {

namespace {
std::vector<double> finite(std::span<const double> values) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) {
    if (!std::isnan(x)) v.push_back(x);
  }
  return v;
}
}  // namespace

double percentile(std::span<const double> values, double q) {
  // The two order statistics around the position, by selection (linear) rather than a sort:
  // the summary takes a median of every iteration's ranks at every size.
  std::vector<double> v = finite(values);
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), at, v.end());
  const double below = *at;
  const double above = lo + 1 < v.size() ? *std::min_element(at + 1, v.end()) : below;
  return below + (above - below) * (pos - static_cast<double>(lo));
}

double percentile_of_sorted(std::span<const double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double mad(std::span<const double> values) {
  const double m = median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double x : values) {
    if (!std::isnan(x)) dev.push_back(std::fabs(x - m));
  }
  return median(dev);
}

std::vector<double> iteration_durations(std::span<const double> rows, std::size_t world,
                                        std::span<const std::size_t> columns) {
  std::vector<double> out;
  if (world == 0) return out;
  const std::size_t iters = rows.size() / world;
  out.assign(iters, std::numeric_limits<double>::quiet_NaN());
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < iters; ++i) {
    const double* row = rows.data() + i * world;
    // A NaN compares false, so it never becomes the largest: no branch on it.
    double largest = kNone;
    if (columns.empty()) {
      for (std::size_t r = 0; r < world; ++r) largest = row[r] > largest ? row[r] : largest;
    } else {
      for (std::size_t r : columns) {
        if (r < world) largest = row[r] > largest ? row[r] : largest;
      }
    }
    if (largest != kNone) out[i] = largest;
  }
  return out;
}

std::vector<double> row_medians(std::span<const double> rows, std::size_t world) {
  std::vector<double> out;
  if (world == 0) return out;
  for (std::size_t i = 0; i + world <= rows.size(); i += world) {
    out.push_back(median(rows.subspan(i, world)));
  }
  return out;
}

std::vector<double> column_medians(std::span<const double> rows, std::size_t world) {
  std::vector<double> out;
  if (world == 0) return out;
  const std::size_t iters = rows.size() / world;
  std::vector<double> column(iters);
  for (std::size_t r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < iters; ++i) column[i] = rows[i * world + r];
    out.push_back(median(column));
  }
  return out;
}

}  // namespace shakedown
