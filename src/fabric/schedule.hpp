#pragma once
// The link scan's pair schedules over N nodes (docs/linkscan.md). A round is a set of node pairs
// that run at the same time, each node in at most one pair, so a round loads every node once.
//  - all_pairs: the circle method (round-robin tournament): N-1 rounds of N/2 pairs for even N,
//    N rounds of (N-1)/2 pairs for odd N (one node sits each round out); every unordered pair
//    exactly once.
//  - random: `rounds` rounds, each a seeded shuffle whose first half is paired with its second
//    half (imbue's cluster-health), so a bad node meets many partners and a bad partner's effect
//    averages out.
// pack_rounds puts a list of pairs (the retests) into as few rounds as a greedy pass finds.
#include <cstdint>
#include <string>
#include <vector>

namespace shakedown::fabric {

struct NodePair {
  int a = 0, b = 0;  // node indices, a < b
  friend bool operator==(const NodePair&, const NodePair&) = default;
  friend auto operator<=>(const NodePair&, const NodePair&) = default;
};
// The pair of x and y, lower index first.
NodePair node_pair(int x, int y);

using Round = std::vector<NodePair>;

std::vector<Round> circle_rounds(int nodes);
std::vector<Round> random_rounds(int nodes, int rounds, std::uint64_t seed);
// `schedule` is "all_pairs" or "random"; `rounds` 0 means N-1 (at least 1) for random and is
// ignored for all_pairs. Throws std::invalid_argument for another schedule name.
std::vector<Round> scan_rounds(int nodes, const std::string& schedule, int rounds,
                               std::uint64_t seed);
// Rounds in which no node appears twice, pairs kept in their order within each round.
std::vector<Round> pack_rounds(const std::vector<NodePair>& pairs);

// The partner of `node` in `round`, or -1 when it sits the round out.
int partner_in(const Round& round, int node);

}  // namespace shakedown::fabric
