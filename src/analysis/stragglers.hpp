#pragma once
// Straggler detection on local work (DESIGN.md "Timing and imbalance"): a rank is a straggler
// when its robust z-score 0.6745 (x - median) / MAD exceeds `z` AND it is at least `slowdown`
// slower than the median. Inputs are per-rank costs (time: larger is slower); NaN entries (ranks
// that did not take part) are ignored. With MAD 0 (most ranks identical) any rank above the
// median has an infinite z, so the slowdown criterion alone decides.
#include <span>
#include <vector>

namespace shakedown {

struct Straggler {
  int rank = 0;
  double value = 0;     // its cost
  double median = 0;    // the median cost over ranks
  double z = 0;         // robust z-score
  double slowdown = 0;  // value / median - 1
};

std::vector<Straggler> find_stragglers(std::span<const double> cost_of_rank, double z,
                                       double slowdown);

}  // namespace shakedown
