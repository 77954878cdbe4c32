#include "devices/schedule.hpp"

#include <algorithm>

namespace shakedown::devices {

const char* pair_mode_name(PairMode mode) {
  switch (mode) {
    case PairMode::kUnidirectional:
      return "unidirectional";
    case PairMode::kBidirectional:
      return "bidirectional";
    case PairMode::kConcurrent:
      return "concurrent";
  }
  return "?";
}

std::vector<PairStep> pair_schedule(int g, const std::string& pairs) {
  std::vector<PairStep> steps;
  if (g < 2 || pairs == "none") return steps;
  const bool ring = pairs == "ring";
  // Unordered pairs {a, b}, a < b, in the order they are tested.
  std::vector<std::pair<int, int>> links;
  for (int a = 0; a < g; ++a) {
    for (int b = a + 1; b < g; ++b) {
      const bool neighbours = b == a + 1 || (a == 0 && b == g - 1);
      if (!ring || neighbours) links.emplace_back(a, b);
    }
  }
  for (const auto& [a, b] : links) {
    steps.push_back({PairMode::kUnidirectional, {{a, b}}});
    steps.push_back({PairMode::kUnidirectional, {{b, a}}});
  }
  for (const auto& [a, b] : links) {
    steps.push_back({PairMode::kBidirectional, {{a, b}, {b, a}}});
  }
  std::vector<int> shifts;
  for (int k = 1; k < g; ++k) {
    if (!ring || k == 1 || k == g - 1) shifts.push_back(k);
  }
  for (int k : shifts) {
    PairStep step{PairMode::kConcurrent, {}};
    for (int d = 0; d < g; ++d) step.copies.push_back({(d + k) % g, d});
    steps.push_back(std::move(step));
  }
  return steps;
}

const PairCopy* copy_of(const PairStep& step, int local) {
  auto it = std::find_if(step.copies.begin(), step.copies.end(),
                         [&](const PairCopy& c) { return c.dst == local; });
  return it == step.copies.end() ? nullptr : &*it;
}

std::vector<double> estimate_steps(const StepModel& m) {
  const double runs = m.warmup + m.trials;
  const double g = std::max(m.devices, 1);
  std::vector<double> out;
  for (const double run : m.test_run_s) {
    const double alone = g * (runs * run + m.per_trial_s);  // a barrier per turn
    const double together = runs * (run * (m.shared ? g : 1.0) + m.per_trial_s);
    out.push_back(alone + together);
  }
  std::vector<double> pairs(kPairModes, 0.0);
  for (const PairStep& step : pair_schedule(m.devices, m.pairs)) {
    const double load = m.shared ? static_cast<double>(step.copies.size()) : 1.0;
    pairs[static_cast<std::size_t>(step.mode)] += runs * (m.pair_copy_s * load + m.per_trial_s);
  }
  out.insert(out.end(), pairs.begin(), pairs.end());
  return out;
}

}  // namespace shakedown::devices
