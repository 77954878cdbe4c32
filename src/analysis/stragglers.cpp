#include "analysis/stragglers.hpp"

#include <cmath>
#include <limits>

#include "core/stats.hpp"

namespace shakedown {

std::vector<Straggler> find_stragglers(std::span<const double> cost_of_rank, double z,
                                       double slowdown) {
  std::vector<Straggler> out;
  const double med = median(cost_of_rank);
  if (std::isnan(med) || med <= 0) return out;
  const double dev = mad(cost_of_rank);
  for (std::size_t r = 0; r < cost_of_rank.size(); ++r) {
    const double x = cost_of_rank[r];
    if (std::isnan(x) || x <= med) continue;
    const double score =
        dev > 0 ? 0.6745 * (x - med) / dev : std::numeric_limits<double>::infinity();
    const double slower = x / med - 1.0;
    if (score > z && slower >= slowdown) {
      out.push_back({static_cast<int>(r), x, med, score, slower});
    }
  }
  return out;
}

}  // namespace shakedown
