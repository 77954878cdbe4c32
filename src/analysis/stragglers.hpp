#pragma once
// Stragglers that hold up to noise (docs/architecture.md "Timing and the verdict"). Interference (a
// shared core, a descheduled process) only ever adds time, so each rank is judged by the lower half
// of its samples in each case (a GEMM shape, a collective size). A rank is named only when:
//  - its level (25th percentile) exceeds the other ranks' median level by at least `slowdown`
//    of the case's scale (the others' level for times; the iteration's duration for lateness),
//  - beyond the spread of the other ranks' own excesses (more than `z` robust standard
//    deviations, 1.4826 MAD), so ranks sharing cores are judged against each other's noise,
//  - in at least two cases (one when there is only one) and in most of the cases compared,
//  - and its samples are larger than the others' in most iterations over all cases together:
//    a stratified one-sided Mann-Whitney (rank-sum) test, Bonferroni-corrected for the number of
//    ranks tested, at level `alpha`.
// When ranks share cores (`shared`), a case also needs the rank's level above the slowest other
// rank's by at least half of `slowdown`: the scheduler favours some ranks over others for a
// whole phase (on 2 cores, two ranks of four at 950 us and two at 1,300-1,340 us), and the slower
// of a slow group stands out from the median without standing out from its group. Ranks that
// meet every other criterion but not that one are not named, and are reported apart as slower
// together (`Stragglers::together`), so that a check says so instead of passing silently.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace shakedown {

// U of x against y: #pairs (x > y) + 0.5 #ties, from the rank sum of x in the pooled sample.
double mann_whitney_u(std::span<const double> x, std::span<const double> y);
// Sum of t^3 - t over the tie groups of x and y pooled (0: no ties), for U's variance.
double mann_whitney_tie_sum(std::span<const double> x, std::span<const double> y);
// How many of the C(m + n, m) rankings without ties give U = 0, 1, ..., m n.
std::vector<double> mann_whitney_null_counts(std::size_t m, std::size_t n);

// P(U >= observed) when x is not stochastically larger than y: the one-sided p-value of
// "x tends to be larger". NaN entries are ignored; 1 when either side is empty.
double mann_whitney_greater(std::span<const double> x, std::span<const double> y);

struct StragglerCase {
  std::string name;            // "256x768x256", "world all_reduce float32_sum 1 MiB"
  std::vector<double> values;  // [iters, world] row-major; NaN where a rank has no sample
  std::size_t iters = 0, world = 0;
  double scale = 0;  // the excess is measured against this; <= 0: the other ranks' median
};

struct StragglerLimits {
  double slowdown = 0.10;  // minimum excess, as a fraction of the scale
  double z = 3.5;          // beyond this many robust standard deviations of the others
  double alpha = 0.01;     // family-wise, per case
  bool shared = false;     // ranks share cores: a rank must stand out from every other one
};

struct StragglerEvidence {
  int rank = 0;
  int flagged = 0, compared = 0;  // cases where it was slower on every criterion / compared
  double excess = 0;  // its median excess over the flagged cases (0.31 = 31% of the scale)
  double p = 1;       // the corrected p of the rank-sum test over all cases compared
  std::vector<std::string> cases;  // the flagged cases' names
  // Only in Stragglers::together: the other ranks as slow as this one that the shared-cores
  // rule compared it with (the slowest other rank of each case held back).
  std::vector<int> with;
};

// The smallest corrected p any rank could reach with `cases` cases of `iters` samples for each of
// `world` ranks (every sample of one rank above all of the others'): when it is not below
// `alpha`, find_stragglers cannot name anybody there, and a check must say so rather than pass.
// 1 with fewer than 3 ranks (find_stragglers needs 3).
double best_possible_p(std::size_t cases, std::size_t iters, std::size_t world);

// "" when `cases` cases of `samples` samples from `members` ranks (or groups) can show one
// slower at p < alpha; else why not and what would ("run train.steps >= 12", with `knob` the
// config key that sets the samples): a check that cannot fail must not pass.
std::string cannot_judge(std::size_t cases, std::size_t samples, std::size_t members,
                         const std::string& what, double alpha, const std::string& knob);

// "" when `cases` cases of `samples` samples from `members` ranks leave margin (the best
// possible p under alpha / 10); else, for a PASS to say how little it could see, "; with N
// sample(s) only a rank slower than every other in every one could be named (<knob> >= M
// to see a slowdown that overlaps the others)".
std::string few_samples_note(std::size_t cases, std::size_t samples, std::size_t members,
                             double alpha, const std::string& knob);

struct Stragglers {
  std::vector<StragglerEvidence> named;
  // Slower than the others on every criterion but the shared-cores one (empty unless `shared`):
  // slow as a group, none of them beyond the slowest other rank. Their flagged cases count the
  // cases the shared rule held back too.
  std::vector<StragglerEvidence> together;
};

Stragglers find_stragglers(const std::vector<StragglerCase>& cases, const StragglerLimits& limits);

}  // namespace shakedown
