#include "analysis/stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/number_text.hpp"
#include "core/stats.hpp"

namespace shakedown {

double mann_whitney_tie_sum(std::span<const double> x, std::span<const double> y) {
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  std::sort(all.begin(), all.end());
  double ties = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  return ties;
}

std::vector<double> mann_whitney_null_counts(std::size_t m, std::size_t n) {
  // The recurrence N(i, j, u) = N(i - 1, j, u - j) + N(i, j - 1, u), row by row in i.
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (std::size_t j = 0; j <= n; ++j) prev[j] = {1.0};  // i = 0: one ranking, U = 0
  for (std::size_t i = 1; i <= m; ++i) {
    cur[0] = {1.0};
    for (std::size_t j = 1; j <= n; ++j) {
      std::vector<double> c(i * j + 1, 0.0);
      for (std::size_t k = 0; k < cur[j - 1].size(); ++k) c[k] += cur[j - 1][k];
      for (std::size_t k = 0; k < prev[j].size(); ++k) c[k + j] += prev[j][k];
      cur[j] = std::move(c);
    }
    std::swap(prev, cur);
  }
  return prev[n];
}

// U = #pairs (x > y) + 0.5 #ties, from the rank sum of x in the pooled sample: O((m + n) log)
// rather than O(m n) (30000 iterations x 4 ranks must not take seconds).
double mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  std::vector<std::pair<double, int>> all;
  all.reserve(x.size() + y.size());
  for (double v : x) all.emplace_back(v, 1);
  for (double v : y) all.emplace_back(v, 0);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double average = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k) rank_sum += all[k].second * average;
    i = j;
  }
  const auto m = static_cast<double>(x.size());
  return rank_sum - m * (m + 1) / 2;
}

namespace {

std::vector<double> finite_values(std::span<const double> v) {
  std::vector<double> out;
  for (double x : v) {
    if (std::isfinite(x)) out.push_back(x);
  }
  return out;
}

// Exact P(U >= u) for sample sizes m, n without ties.
double exact_upper_tail(std::size_t m, std::size_t n, double u) {
  const std::vector<double> counts = mann_whitney_null_counts(m, n);
  double total = 0, tail = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    total += counts[k];
    if (static_cast<double>(k) >= u - 1e-9) tail += counts[k];
  }
  return total > 0 ? tail / total : 1.0;
}

// Ranks with at most this many present ranks get exact leave-one-out statistics.
constexpr std::size_t kExactLeaveOneOut = 64;

// Every present rank's sum of (tie-averaged) ranks of its values in the pooled sample of all
// present ranks' values: U of rank r against all the others = sums[r] - m (m + 1) / 2.
std::vector<double> rank_sums(const std::vector<std::vector<double>>& values,
                              const std::vector<int>& present) {
  std::vector<std::pair<double, int>> all;
  for (int r : present) {
    for (double v : values[static_cast<std::size_t>(r)]) all.emplace_back(v, r);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> sums(values.size(), 0.0);
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double average = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k) sums[static_cast<std::size_t>(all[k].second)] += average;
    i = j;
  }
  return sums;
}

}  // namespace

double mann_whitney_greater(std::span<const double> xs, std::span<const double> ys) {
  const std::vector<double> x = finite_values(xs), y = finite_values(ys);
  const std::size_t m = x.size(), n = y.size();
  if (m == 0 || n == 0) return 1.0;
  const double u = mann_whitney_u(x, y);
  if (m * n <= 400) return exact_upper_tail(m, n, std::ceil(u - 1e-9));
  // Normal approximation with continuity and tie corrections.
  const double ties = mann_whitney_tie_sum(x, y);
  const double mm = static_cast<double>(m), nn = static_cast<double>(n), N = mm + nn;
  const double mean = mm * nn / 2;
  const double var = mm * nn / 12 * ((N + 1) - ties / (N * (N - 1)));
  if (var <= 0) return 1.0;
  const double z = (u - mean - 0.5) / std::sqrt(var);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

double best_possible_p(std::size_t cases, std::size_t iters, std::size_t world) {
  if (world < 3 || iters == 0 || cases == 0) return 1;
  // As find_stragglers: the lower half of each rank's samples, U summed over the cases.
  const auto m = static_cast<double>((iters + 1) / 2);
  const double n = m * static_cast<double>(world - 1);
  const double k = static_cast<double>(cases);
  const double u = k * m * n, mean = k * m * n / 2, var = k * m * n * (m + n + 1) / 12;
  const double z = (u - mean - 0.5) / std::sqrt(var);
  return std::min(1.0, static_cast<double>(world) * 0.5 * std::erfc(z / std::sqrt(2.0)));
}

Stragglers find_stragglers(const std::vector<StragglerCase>& cases, const StragglerLimits& limits) {
  struct Tally {
    int flagged = 0, compared = 0;
    std::vector<double> excess;
    std::vector<std::string> cases;
    // The cases that met every criterion but perhaps the shared-cores one, in order.
    int either = 0;
    std::vector<double> either_excess;
    std::vector<std::string> either_cases;
    std::set<int> with;  // the slowest other ranks of the cases the shared rule held back
    double u = 0, mean = 0, var = 0;  // the Mann-Whitney U summed over cases, and its null moments
  };
  std::map<int, Tally> tally;
  int tested = 0;
  for (const StragglerCase& c : cases) {
    // Each rank's samples, their lower half (interference only ever adds time: the lower half
    // shows what the rank can do) and its 25th percentile.
    std::vector<std::vector<double>> low(c.world);
    std::vector<double> level(c.world, std::nan(""));
    std::vector<int> present;
    for (std::size_t r = 0; r < c.world; ++r) {
      std::vector<double> mine;
      for (std::size_t i = 0; i < c.iters; ++i) {
        const double v = c.values[i * c.world + r];
        if (std::isfinite(v)) mine.push_back(v);
      }
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end());
      low[r].assign(mine.begin(), mine.begin() + static_cast<long>((mine.size() + 1) / 2));
      level[r] = percentile_of_sorted(mine, 0.25);
      present.push_back(static_cast<int>(r));
    }
    if (present.size() < 3) continue;  // two ranks cannot say which one is slow
    tested = std::max(tested, static_cast<int>(present.size()));
    // Leave-one-out statistics (the others' median level, their excesses' median and spread)
    // exactly for small worlds; with many ranks one rank cannot move them, and computing them
    // per rank would cost world^2 per case, so every rank is compared with all of them.
    const bool exact = present.size() <= kExactLeaveOneOut;
    std::vector<double> all_levels;
    for (int o : present) all_levels.push_back(level[static_cast<std::size_t>(o)]);
    const double all_ref = exact ? 0 : median(all_levels);
    // Each rank's excess over the others' median level, in units of the scale.
    std::vector<double> excess(c.world, std::nan("")), scales(c.world, std::nan(""));
    for (int r : present) {
      double ref = all_ref;
      if (exact) {
        std::vector<double> others;
        for (int o : present) {
          if (o != r) others.push_back(level[static_cast<std::size_t>(o)]);
        }
        ref = median(others);
      }
      const double scale = c.scale > 0 ? c.scale : ref;
      scales[static_cast<std::size_t>(r)] = scale;
      if (scale > 0) {
        excess[static_cast<std::size_t>(r)] = (level[static_cast<std::size_t>(r)] - ref) / scale;
      }
    }
    // Each rank's rank sum in the pooled lower halves of every rank: its Mann-Whitney U against
    // all the others', from one sort per case.
    const std::vector<double> sums = rank_sums(low, present);
    std::size_t pooled_size = 0;
    for (int o : present) pooled_size += low[static_cast<std::size_t>(o)].size();
    std::vector<double> all_excess;
    for (int o : present) {
      if (std::isfinite(excess[static_cast<std::size_t>(o)])) {
        all_excess.push_back(excess[static_cast<std::size_t>(o)]);
      }
    }
    // The slowest rank's level and the next (what every other rank is compared with when cores
    // are shared).
    int slowest = present.front(), second = -1;
    for (int o : present) {
      if (o == slowest) continue;
      const double v = level[static_cast<std::size_t>(o)];
      if (v > level[static_cast<std::size_t>(slowest)]) {
        second = slowest;
        slowest = o;
      } else if (second < 0 || v > level[static_cast<std::size_t>(second)]) {
        second = o;
      }
    }
    const double all_excess_median = exact ? 0 : median(all_excess);
    const double all_spread = exact ? 0 : 1.4826 * mad(all_excess);
    for (int r : present) {
      const auto rr = static_cast<std::size_t>(r);
      if (!std::isfinite(excess[rr])) continue;
      Tally& t = tally[r];
      ++t.compared;
      // The rank-sum evidence of this case, pooled with the others' below.
      const auto m = static_cast<double>(low[rr].size());
      const auto n = static_cast<double>(pooled_size) - m;
      t.u += sums[rr] - m * (m + 1) / 2;
      t.mean += m * n / 2;
      t.var += m * n * (m + n + 1) / 12;
      if (excess[rr] < limits.slowdown) continue;
      double spread = all_spread, mid = all_excess_median;
      if (exact) {
        std::vector<double> others_excess;
        for (int o : present) {
          if (o != r) others_excess.push_back(excess[static_cast<std::size_t>(o)]);
        }
        spread = 1.4826 * mad(others_excess);
        mid = median(others_excess);
      }
      if (!(excess[rr] - mid > limits.z * spread)) continue;
      ++t.either;
      t.either_excess.push_back(excess[rr]);
      t.either_cases.push_back(c.name);
      if (limits.shared) {
        const int other = r == slowest ? second : slowest;
        if (!((level[rr] - level[static_cast<std::size_t>(other)]) / scales[rr] >=
              limits.slowdown / 2)) {
          t.with.insert(other);
          continue;
        }
      }
      ++t.flagged;
      t.excess.push_back(excess[rr]);
      t.cases.push_back(c.name);
    }
  }
  Stragglers out;
  for (const auto& [rank, t] : tally) {
    const int needed = t.compared >= 2 ? 2 : 1;
    const int compared = t.compared;  // a structured binding: not captured by clang's C++20
    auto enough = [&](int flagged) { return flagged >= needed && 2 * flagged > compared; };
    if (!enough(t.either) || t.var <= 0) continue;
    // Slower in most of its iterations, over all cases together (a stratified rank-sum test),
    // corrected for the number of ranks tested.
    const double z = (t.u - t.mean - 0.5) / std::sqrt(t.var);
    const double p = std::min(1.0, tested * 0.5 * std::erfc(z / std::sqrt(2.0)));
    if (!(p < limits.alpha)) continue;
    if (enough(t.flagged)) {
      out.named.push_back({rank, t.flagged, t.compared, median(t.excess), p, t.cases, {}});
      continue;
    }
    out.together.push_back({rank, t.either, t.compared, median(t.either_excess), p, t.either_cases,
                            std::vector<int>(t.with.begin(), t.with.end())});
  }
  return out;
}

std::string cannot_judge(std::size_t cases, std::size_t samples, std::size_t members,
                         const std::string& what, double alpha, const std::string& knob) {
  if (members < 3) {
    return std::to_string(members) + " " + what +
           ": which one is slow cannot be told from fewer than 3 (not judged)";
  }
  if (best_possible_p(cases, samples, members) < alpha) return "";
  std::size_t need = samples;
  while (need < 100000 && best_possible_p(cases, need, members) >= alpha) ++need;
  return std::to_string(samples) + " sample(s) each of " + std::to_string(members) + " " + what +
         " cannot show one slower at p < " + general_text(alpha, 2) + " (not judged); run " + knob +
         " >= " + std::to_string(need);
}

std::string few_samples_note(std::size_t cases, std::size_t samples, std::size_t members,
                             double alpha, const std::string& knob) {
  const double margin = alpha / 10;
  if (members < 3 || best_possible_p(cases, samples, members) < margin) return "";
  std::size_t need = samples;
  while (need < 100000 && best_possible_p(cases, need, members) >= margin) ++need;
  return "; with " + std::to_string(samples) +
         " sample(s) only a rank slower than every other in every one could be named (" + knob +
         " >= " + std::to_string(need) + " to see a slowdown that overlaps the others)";
}

}  // namespace shakedown
