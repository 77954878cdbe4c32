#include "fabric/schedule.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace shakedown::fabric {

NodePair node_pair(int x, int y) {
  return x < y ? NodePair{x, y} : NodePair{y, x};
}

std::vector<Round> circle_rounds(int nodes) {
  std::vector<Round> rounds;
  if (nodes < 2) return rounds;
  // Odd N gets a phantom node N: whoever meets it sits the round out.
  const int n = nodes % 2 == 0 ? nodes : nodes + 1;
  // Node n-1 stays put; the others turn one place per round.
  std::vector<int> ring(static_cast<std::size_t>(n - 1));
  std::iota(ring.begin(), ring.end(), 0);
  rounds.reserve(static_cast<std::size_t>(n - 1));
  for (int r = 0; r < n - 1; ++r) {
    Round round;
    const auto at = [&](int i) { return ring[static_cast<std::size_t>((r + i) % (n - 1))]; };
    const int fixed_partner = at(0);
    if (n == nodes) round.push_back(node_pair(n - 1, fixed_partner));  // not the phantom
    for (int i = 1; i < n / 2; ++i) {
      const int x = at(i), y = at(n - 1 - i);
      if (x < nodes && y < nodes) round.push_back(node_pair(x, y));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<Round> random_rounds(int nodes, int rounds, std::uint64_t seed) {
  std::vector<Round> out;
  if (nodes < 2) return out;
  std::vector<int> order(static_cast<std::size_t>(nodes));
  for (int r = 0; r < rounds; ++r) {
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(r));
    std::shuffle(order.begin(), order.end(), rng);
    Round round;
    const int half = nodes / 2;
    for (int i = 0; i < half; ++i) {
      round.push_back(
          node_pair(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(i + half)]));
    }
    std::sort(round.begin(), round.end());
    out.push_back(std::move(round));
  }
  return out;
}

std::vector<Round> scan_rounds(int nodes, const std::string& schedule, int rounds,
                               std::uint64_t seed) {
  if (schedule == "all_pairs") return circle_rounds(nodes);
  if (schedule == "random") {
    return random_rounds(nodes, rounds > 0 ? rounds : std::max(1, nodes - 1), seed);
  }
  throw std::invalid_argument("unknown link scan schedule '" + schedule + "'");
}

std::vector<Round> pack_rounds(const std::vector<NodePair>& pairs) {
  std::vector<Round> rounds;
  std::vector<std::vector<int>> busy;  // per round, the nodes already in it (sorted)
  for (const NodePair& p : pairs) {
    std::size_t r = 0;
    for (; r < rounds.size(); ++r) {
      const auto& b = busy[r];
      if (!std::binary_search(b.begin(), b.end(), p.a) &&
          !std::binary_search(b.begin(), b.end(), p.b)) {
        break;
      }
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].push_back(p);
    auto& b = busy[r];
    b.insert(std::upper_bound(b.begin(), b.end(), p.a), p.a);
    b.insert(std::upper_bound(b.begin(), b.end(), p.b), p.b);
  }
  return rounds;
}

int partner_in(const Round& round, int node) {
  for (const NodePair& p : round) {
    if (p.a == node) return p.b;
    if (p.b == node) return p.a;
  }
  return -1;
}

}  // namespace shakedown::fabric
