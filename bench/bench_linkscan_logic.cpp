// The link scan's scheduling and localisation at scale (issue 19: 1,024 nodes in under 1 s):
// the all_pairs schedule of N nodes, then the localisation of a synthetic scan of it (every
// pair 10 GB/s with 0.5% noise, `bad` nodes 3x slower; retests, then the failed ones again),
// timed; prints the time against the
// target and whether exactly the planted nodes were convicted.
// Usage: bench_linkscan_logic [nodes=1024] [bad=3]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>

#include "fabric/localise.hpp"
#include "fabric/schedule.hpp"

using namespace shakedown::fabric;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int bad = argc > 2 ? std::atoi(argv[2]) : 3;
  if (n < 3 || bad < 0 || bad >= n / 2) {
    std::fprintf(stderr, "usage: bench_linkscan_logic [nodes >= 3] [bad < nodes/2]\n");
    return 2;
  }
  std::set<int> slow;
  for (int i = 0; i < bad; ++i) slow.insert((i * 7919 + 11) % n);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0, 0.005);
  const auto measure = [&](const NodePair& p) {
    const double f = slow.count(p.a) > 0 || slow.count(p.b) > 0 ? 3.0 : 1.0;
    return PairResult{p, 10 * (1 + noise(rng)) / f, 2 * (1 + std::abs(noise(rng)))};
  };
  const auto start = std::chrono::steady_clock::now();
  const auto rounds = circle_rounds(n);
  const auto scheduled = std::chrono::steady_clock::now();
  std::vector<PairResult> pass;
  pass.reserve(static_cast<std::size_t>(n) * (n - 1) / 2);
  for (const Round& r : rounds) {
    for (const NodePair& p : r) pass.push_back(measure(p));
  }
  const auto measured = std::chrono::steady_clock::now();
  const Thresholds t;
  const Judged judged = judge_pass(n, pass, t);
  const Reference& ref = judged.reference;
  const Suspects& s = judged.suspects;
  const RetestPlan plan = plan_retests(s, 2, 4 * n);
  const auto packed = pack_rounds(plan.pairs);
  std::vector<PairResult> retests;
  for (const NodePair& p : plan.pairs) retests.push_back(measure(p));
  // The failed retests once more (the phase's third pass), from what the budget leaves.
  const std::vector<std::size_t> again = plan_repeats(plan, retests, ref, t, 4 * n);
  std::vector<PairResult> repeats;
  for (const std::size_t i : again) repeats.push_back(measure(plan.pairs[i]));
  const Localisation l = localise(s, plan, with_repeats(retests, again, repeats, ref, t), ref, t);
  const auto done = std::chrono::steady_clock::now();
  std::set<int> convicted;
  for (const auto& f : l.nodes) {
    if (f.outcome == Outcome::kConvicted) convicted.insert(f.node);
  }
  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double logic = secs(start, scheduled) + secs(measured, done);
  std::printf(
      "nodes %d, pairs %zu, rounds %zu; schedule %.3f s, localisation %.3f s "
      "(%zu suspects, %zu retest pairs in %zu rounds, %zu run again)\n",
      n, pass.size(), rounds.size(), secs(start, scheduled), secs(measured, done),
      s.nodes.size() + s.links.size(), plan.pairs.size(), packed.size(), again.size());
  std::printf("logic %.3f s, target 1 s: ratio %.2f (<= 1 meets it); convicted %s the %d planted\n",
              logic, logic / 1.0, convicted == slow ? "exactly" : "NOT", bad);
  return convicted == slow ? 0 : 1;
}
