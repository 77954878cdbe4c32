#pragma once
// `shakedown compare BASELINE.h5 RUN.h5`: what got slower or faster between two runs (before and
// after a maintenance), item by item, beyond noise (analysis/compare_stats.hpp), and where:
//  - collectives: per sweep (scope, collective, dtype, mode) and message size, the per-iteration
//    time of the collective (its slowest rank); for intra_node sweeps also per node;
//  - gemm: per shape, the run's GEMM time (each iteration's median rank), and per rank (matched by
//    host, node and local rank) its time relative to its own run's median rank, so a rank or
//    node that changed against its peers is named even when the whole machine drifted.
// Each item: the ratio after/before as exp(Hodges-Lehmann shift of log time) with its interval,
// and the two-sided Mann-Whitney p, Bonferroni-corrected over the items judged. An item regressed
// when the ratio is at least 1 + min_effect and the corrected p below alpha (improved: at most
// 1 / (1 + min_effect)). Regressions are then gathered per node and per collective, so the answer
// is a short list of where to look.
//  - train: per step component (step, forward, backward, TP communication, exposed DP
//    communication, optimizer), the run's value per measured step (the slowest rank's step, the
//    median rank's components), and per rank its compute (forward + backward) against its own
//    run's median rank;
//  - checkpoint: per layout, each iteration's aggregate write and restore time (IOR's timing:
//    latest end - earliest start on aligned clocks).
//  - linkscan: per rail and node (matched by index and host), the time of each first-pass
//    window with all its partners; a node whose NIC, cable or port got slower is named (a single
//    link is left to each run's own linkscan.links check).
// An item whose samples are too few for the exact test ever to reach alpha is "not judged", with
// its counts (3 checkpoints against 3: the smallest two-sided p is 0.1). When either file was
// written by a sanitizer build, absolute times (every item but a rank against its run's median)
// are not judged either: they are several times slower and move between runs (as the verdict
// does not hold them to the platform's numbers).
#include <string>
#include <utility>
#include <vector>

#include "record/reader.hpp"

namespace shakedown {

struct CompareOptions {
  double alpha = 0.05;       // family-wise, over the items judged
  double min_effect = 0.05;  // smallest change that counts (0.05: 5% slower)
  // ... for a rank or node against its peers: the baseline's straggler slowdown
  // (checks.straggler_slowdown, or _shared where ranks share cores) unless set (>= 0).
  double min_effect_per_rank = -1;
};

// The unit of an item that is a rank's time over its own run's median rank's.
inline constexpr const char* kRelativeUnit = "x median";

struct CompareItem {
  std::string phase;  // collectives | gemm | train | checkpoint | linkscan
  std::string what;   // "world all_reduce float32_sum out_of_place", "256x768x256"
  std::string size;   // "1 MiB" (collectives), "" otherwise
  std::string where;  // "" (the whole run), "node 1 (host vm)", "rank 2 (host vm, local 0)"
  std::string group;  // the aggregation key: "node 1 (host vm): gemm", "world all_reduce ..."
  std::string label;  // how its group's line lists it ("64x128x128 rank 2"); "": size or what
  std::size_t n_before = 0, n_after = 0;
  std::string unit = "us";  // "us", "ms", "s", or kRelativeUnit (a rank against its run's median)
  double before_us = 0, after_us = 0;  // medians, in `unit`
  double ratio = 1, lo = 1, hi = 1;    // after / before, with its interval
  double p = 1;                        // two-sided, uncorrected
  enum class Result { kSlower, kFaster, kSame, kNotJudged } result = Result::kNotJudged;
  std::string not_judged_why;  // when not judged: "too few samples ...", "a sanitizer build ..."
};

// A place: the items of one group (a sweep over its sizes, a node, a rank, a train component).
struct CompareGroup {
  std::string name;        // CompareItem::group
  std::string phase;       // of its items
  bool per_place = false;  // a rank or node (held to the per-rank minimum effect)
  std::size_t judged = 0, slower = 0, faster = 0;
  // Items whose interval rules out a slowdown (faster-up) beyond the minimum effect: they speak
  // against a change that way. Items too noisy to tell speak for neither.
  std::size_t not_slower = 0, not_faster = 0;
  enum class Result { kSlower, kFaster, kSame } result = Result::kSame;
  double ratio = 1;  // median ratio of its changed items (all judged items when unchanged)
  double p = 1;      // smallest uncorrected p among them
  std::vector<std::string> changed;  // labels of the items that changed the group's way
  std::string line;                  // how the text output states it ("" when unchanged)
};

struct Comparison {
  std::string before_path, after_path;
  std::vector<std::string> warnings;        // versions or configurations that differ
  std::vector<std::string> only_in_before;  // measured there only
  std::vector<std::string> only_in_after;
  std::vector<std::string> not_compared;  // phases this version does not compare
  std::vector<CompareItem> items;
  std::size_t judged = 0, slower = 0, faster = 0, not_judged = 0;  // items
  std::size_t slower_groups = 0, faster_groups = 0;  // places: what the verdict rests on
  bool cut_short = false;  // either run aborted or never finished (said in `warnings`)
  double min_effect_per_rank = 0.05;
  double alpha = 0.05, min_effect = 0.05, alpha_per_item = 0.05;
  // Every group with a judged item: slower ones first (worst first), then faster, then the rest.
  std::vector<CompareGroup> groups;
  // Regressed: a place got slower beyond noise (1). Nothing judged: the runs share items, but
  // none could be judged (too few samples, absolute times where ranks share cores): no answer,
  // not a clean one (exit 2 from `compare`). Else no regression (0).
  bool regressed() const { return slower_groups > 0; }
  bool nothing_judged() const { return !regressed() && judged == 0; }
  int exit_code() const { return regressed() ? 1 : nothing_judged() ? 2 : 0; }
  // What a run or a report that embeds the comparison adds to its own exit code: 1 when it
  // regressed (a comparison that judged nothing says so, and leaves the code alone).
  int regression_code() const { return regressed() ? 1 : 0; }
  // "regressed", "nothing_judged", "no_regression"; and as the text verdict says them.
  const char* verdict_name() const;
  const char* verdict_words() const;
};

// Why items were not judged, with counts: "1431 absolute time with ranks sharing cores; 3 too
// few samples for the test to reach alpha" ("" when every item was judged).
std::string not_judged_reasons(const Comparison& c);

// "slower", "faster", "unchanged", "not_judged": the reports' words for a result.
const char* result_name(CompareItem::Result r);
const char* result_name(CompareGroup::Result r);

// Throws UsageError (exit 2) for files of another schema version or without measurements.
Comparison compare_runs(const RunFile& before, const RunFile& after, const CompareOptions& o);

// The phases compare_runs compares, each with the group its measurements are in (`run
// --baseline` checks up front that the baseline has one of the run's).
const std::vector<std::pair<std::string, std::string>>& compared_phases();
std::string format_comparison(const Comparison& c, bool detail);

}  // namespace shakedown
