#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace shakedown {

namespace {
std::vector<double> finite_sorted(std::span<const double> values) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) {
    if (!std::isnan(x)) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

double percentile(std::span<const double> values, double q) {
  const std::vector<double> v = finite_sorted(values);
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

}  // namespace shakedown
