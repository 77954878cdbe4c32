#pragma once
// From pair results to the node or link at fault (docs/linkscan.md), the way ClusterKit, imbue's
// cluster-health and GCP's cluster-health-scanner do it:
//  1. judge: a pair is suspect when its bandwidth is below bw_fraction x the best pair of the
//     pass, its latency above lat_factor x the lowest, or its transfer failed (ClusterKit's
//     "maximum / minimum seen": a round's best would clear everything on 2 or 3 nodes, where a
//     round holds one pair);
//  2. explain: the node in the most suspect pairs (at least 2) becomes a suspect node and its
//     pairs are explained; repeated until no node has 2 unexplained suspect pairs; what is left
//     are suspect links. Every other node is a good partner;
//  3. retest (bounded budget): each suspect node against `partners` different good partners;
//     each suspect link again, and each of its ends against a good partner;
//  3b. repeat: a retest that failed runs once more while the budget lasts, and counts as failed
//     only when the repeat fails too (a time slice lost to the OS or a neighbour slows one
//     transfer; a slow node or link is slow every time);
//  4. convict: a node that fails with at least two different good partners; a link that fails
//     again while both its ends pass with good partners (a suspect link's ends, or a suspect
//     node the partners cleared and the other end of its slow pair when that end is a good node
//     or passed all its own retests with good partners). A suspect
//     that passes its retests is acquitted (the first pass saw something transient); anything else
//     stays unresolved, with the reason.
// Everything here is a pure function of the numbers, so every rank computes the same retest plan
// and the report recomputes the verdict from the run file.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fabric/schedule.hpp"

namespace shakedown::fabric {

struct PairResult {
  NodePair pair;
  double bw_GBps = 0;  // median over the repetitions; NaN when the transfer failed
  double lat_us = 0;   // median half round trip; NaN when not measured or failed
};

struct Thresholds {
  double bw_fraction = 0.93;
  double lat_factor = 2.1;
};

// The pass's best bandwidth and lowest latency (NaN when no pair has one).
struct Reference {
  double best_bw_GBps = 0;
  double best_lat_us = 0;
};
Reference reference_of(std::span<const PairResult> pass);

// Why a pair is suspect: a bit set of these (0: not suspect).
enum SuspectReason : unsigned { kSlowBandwidth = 1u, kSlowLatency = 2u, kFailed = 4u };
unsigned suspect_reasons(const PairResult& r, const Reference& ref, const Thresholds& t);
// "bandwidth", "latency", "bandwidth and latency", "failed"
std::string reason_text(unsigned reasons);

struct Suspects {
  std::vector<int> nodes;         // ascending
  std::vector<NodePair> links;    // ascending
  std::vector<int> good;          // ascending: neither a suspect node nor the end of a suspect link
  std::vector<NodePair> failing;  // ascending: every suspect pair of the pass
};
// `reasons[i]` belongs to `pass[i]`; nodes are 0 .. node_count-1.
Suspects find_suspects(int node_count, std::span<const PairResult> pass,
                       std::span<const unsigned> reasons);

// Why a pair is retested: a suspect (node, or a link's end) against a good partner, or a
// suspect pair of the pass run again (a suspect link; up to two of a suspect node's pairs, so a
// node the partners clear can still leave its one slow link behind).
enum class RetestKind { kPartner = 0, kAgain = 1 };

// Steps 1 and 2 over one pass: its reference, each pair's reasons, the suspects.
struct Judged {
  Reference reference;
  std::vector<unsigned> reasons;  // per pair of the pass
  Suspects suspects;
};
Judged judge_pass(int node_count, std::span<const PairResult> pass, const Thresholds& t);

struct RetestPlan {
  std::vector<NodePair> pairs;            // in order; pack_rounds() schedules them
  std::vector<RetestKind> kinds;          // per pair
  std::vector<int> subjects;              // per pair: the suspect node it is about, -1 a link
  std::vector<int> unplanned_nodes;       // suspects the budget or the good partners left out
  std::vector<NodePair> unplanned_links;  // ditto
};
// `partners` good partners per suspect node (2 convict), then up to two of its suspect pairs
// again when the budget allows; at most `budget` pairs in all.
RetestPlan plan_retests(const Suspects& suspects, int partners, int budget);

// The result of each planned pair, in the plan's order, from what a pass measured (in its
// rounds' order): a pair planned twice takes its first measurement; one not measured is NaN.
std::vector<PairResult> results_in_order(std::span<const NodePair> planned,
                                         std::span<const PairResult> measured);

// Step 3b: the indices into plan.pairs of the retests that failed, in plan order, as many as
// `budget` leaves after the retests themselves; a pair planned twice (one measurement) once.
std::vector<std::size_t> plan_repeats(const RetestPlan& plan, std::span<const PairResult> retests,
                                      const Reference& ref, const Thresholds& t, int budget);
// The retests with the repeats folded in: `repeats[k]` is the run again of
// `retests[repeated[k]]`; a repeat that passes replaces the failure (at every retest of that
// pair), one that fails keeps it.
std::vector<PairResult> with_repeats(std::span<const PairResult> retests,
                                     std::span<const std::size_t> repeated,
                                     std::span<const PairResult> repeats, const Reference& ref,
                                     const Thresholds& t);

enum class Outcome { kConvicted = 0, kAcquitted = 1, kUnresolved = 2 };
const char* outcome_name(Outcome o);  // "convicted", "acquitted", "unresolved"

struct NodeFinding {
  int node = 0;
  Outcome outcome = Outcome::kUnresolved;
  std::vector<int> failed_with;  // good partners it failed with in the retest
  std::vector<int> passed_with;  // ... and passed with
  std::string why;               // for unresolved: what is missing
};
struct LinkFinding {
  NodePair pair;
  Outcome outcome = Outcome::kUnresolved;
  std::string why;
};
struct Localisation {
  std::vector<NodeFinding> nodes;
  std::vector<LinkFinding> links;
};
// `retests[i]` is the result of `plan.pairs[i]`, judged against the first pass's `ref`.
Localisation localise(const Suspects& suspects, const RetestPlan& plan,
                      std::span<const PairResult> retests, const Reference& ref,
                      const Thresholds& t);

}  // namespace shakedown::fabric
