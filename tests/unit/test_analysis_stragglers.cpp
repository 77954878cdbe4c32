// Straggler detection that holds up to noise: the Mann-Whitney test itself, a planted slow rank
// found (and only it), the consistency rules, and pure noise that names nobody.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/checks.hpp"
#include "analysis/stragglers.hpp"

namespace shakedown {
namespace {

// The ranks find_stragglers names.
std::vector<StragglerEvidence> named(const std::vector<StragglerCase>& cases,
                                     const StragglerLimits& limits) {
  return find_stragglers(cases, limits).named;
}

TEST(MannWhitney, ExactTailsForSmallSamples) {
  // Every x above every y: 1 of C(6,3) = 20 rankings.
  EXPECT_NEAR(mann_whitney_greater(std::vector<double>{4, 5, 6}, std::vector<double>{1, 2, 3}),
              1.0 / 20, 1e-12);
  // Every x below: every ranking has U >= 0.
  EXPECT_NEAR(mann_whitney_greater(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}), 1.0,
              1e-12);
  // 5 samples above 15: 1 / C(20,5).
  std::vector<double> x = {20, 21, 22, 23, 24}, y;
  for (int i = 0; i < 15; ++i) y.push_back(i);
  EXPECT_NEAR(mann_whitney_greater(x, y), 1.0 / 15504, 1e-12);
  // One x below the largest y: U = 74 of 75, and P(U >= 74) = 2 / 15504.
  x[0] = 13.5;
  EXPECT_NEAR(mann_whitney_greater(x, y), 2.0 / 15504, 1e-12);
  EXPECT_EQ(mann_whitney_greater(std::vector<double>{}, y), 1.0);
  EXPECT_EQ(mann_whitney_greater(std::vector<double>{std::nan("")}, y), 1.0);
}

TEST(MannWhitney, NormalApproximationForLargeSamples) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> x, y;
  for (int i = 0; i < 40; ++i) x.push_back(noise(rng) + 2);
  for (int i = 0; i < 120; ++i) y.push_back(noise(rng));
  EXPECT_LT(mann_whitney_greater(x, y), 1e-10);
  EXPECT_GT(mann_whitney_greater(y, x), 0.999);
  // Same distribution: p is not small.
  std::vector<double> z;
  for (int i = 0; i < 40; ++i) z.push_back(noise(rng));
  EXPECT_GT(mann_whitney_greater(z, y), 0.001);
}

// `shapes` cases of `world` ranks x `iters` iterations, lognormal noise of `sigma`, rank `slow`
// (or -1) slower by `factor`.
std::vector<StragglerCase> make_cases(unsigned seed, int shapes, int world, int iters, double sigma,
                                      int slow, double factor) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  std::vector<StragglerCase> cases;
  for (int s = 0; s < shapes; ++s) {
    StragglerCase c{"shape" + std::to_string(s),
                    {},
                    static_cast<std::size_t>(iters),
                    static_cast<std::size_t>(world),
                    0};
    const double base = 1000.0 * (s + 1);
    for (int i = 0; i < iters; ++i) {
      for (int r = 0; r < world; ++r) {
        c.values.push_back(base * std::exp(noise(rng)) * (r == slow ? factor : 1.0));
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(Stragglers, NamesThePlantedRankOnly) {
  const auto found = named(make_cases(1, 4, 4, 5, 0.05, 2, 2.0), {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 2);
  EXPECT_EQ(found[0].flagged, 4);
  EXPECT_EQ(found[0].compared, 4);
  EXPECT_NEAR(found[0].excess, 1.0, 0.2);
  EXPECT_LT(found[0].p, 0.01);
}

// Ranks sharing cores: the scheduler favoured two ranks of four for the whole phase (a healthy
// smoke run's GEMM times, 950 against 1,300-1,340 us). The slower of the slow pair is 40% above
// the others' median, beyond their spread, and slower in every iteration: named when cores are
// not shared, not when they are (it does not stand out from rank 1). A planted 1.3x on shared
// cores still stands out from every other rank.
TEST(Stragglers, OnSharedCoresASlowerGroupIsNotAStraggler) {
  std::vector<StragglerCase> cases;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.02);
  const double favoured[] = {950, 1296, 1344, 950};
  for (int s = 0; s < 4; ++s) {
    StragglerCase c{"shape" + std::to_string(s), {}, 5, 4, 0};
    for (int i = 0; i < 5; ++i) {
      for (double level : favoured) c.values.push_back(level * (s + 1) * std::exp(noise(rng)));
    }
    cases.push_back(std::move(c));
  }
  StragglerLimits shared{0.25, 3.5, 0.01, true};
  StragglerLimits dedicated{0.25, 3.5, 0.01, false};
  const auto apart = named(cases, dedicated);
  ASSERT_EQ(apart.size(), 1u);
  EXPECT_EQ(apart[0].rank, 2);
  // On shared cores nobody is named; the slower of the two disfavoured ranks is said to be slow
  // with the other.
  const Stragglers on_shared = find_stragglers(cases, shared);
  EXPECT_TRUE(on_shared.named.empty());
  ASSERT_EQ(on_shared.together.size(), 1u);
  EXPECT_EQ(on_shared.together[0].rank, 2);
  EXPECT_EQ(on_shared.together[0].with, std::vector<int>{1});
  int found_right = 0;
  for (unsigned seed = 0; seed < 20; ++seed) {
    const auto found = named(make_cases(seed, 4, 4, 5, 0.05, 1, 1.3), shared);
    found_right += found.size() == 1 && found[0].rank == 1 ? 1 : 0;
  }
  EXPECT_GE(found_right, 19);
}

// The limit of the shared-cores rule: two ranks slow together look like ranks the scheduler
// disfavours, so neither is named there (only the slowest rank can stand out from the slowest
// other), but both are reported as slower together, with their excess and cases; on cores of
// their own both are named.
TEST(Stragglers, OnSharedCoresTwoEquallySlowRanksAreSlowerTogether) {
  std::vector<StragglerCase> cases;
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 0.02);
  const double levels[] = {1000, 2000, 2000, 1000, 1000, 1000, 1000, 1000};
  for (int s = 0; s < 4; ++s) {
    StragglerCase c{"shape" + std::to_string(s), {}, 10, 8, 0};
    for (int i = 0; i < 10; ++i) {
      for (double level : levels) c.values.push_back(level * (s + 1) * std::exp(noise(rng)));
    }
    cases.push_back(std::move(c));
  }
  const auto apart = named(cases, StragglerLimits{0.25, 3.5, 0.01, false});
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_EQ(apart[0].rank, 1);
  EXPECT_EQ(apart[1].rank, 2);
  EXPECT_TRUE(find_stragglers(cases, StragglerLimits{0.25, 3.5, 0.01, false}).together.empty());
  const Stragglers shared = find_stragglers(cases, StragglerLimits{0.25, 3.5, 0.01, true});
  EXPECT_TRUE(shared.named.empty());
  ASSERT_EQ(shared.together.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(shared.together[k].rank, static_cast<int>(k) + 1);
    EXPECT_EQ(shared.together[k].with, std::vector<int>{2 - static_cast<int>(k)});
    EXPECT_NEAR(shared.together[k].excess, 1.0, 0.1);
    EXPECT_EQ(shared.together[k].flagged, 4);
    EXPECT_EQ(shared.together[k].cases.front(), "shape0");
    EXPECT_LT(shared.together[k].p, 0.01);
  }
}

TEST(Stragglers, ThirtyPercentIsFoundWithEnoughIterations) {
  int found_right = 0;
  for (unsigned seed = 0; seed < 20; ++seed) {
    const auto found = named(make_cases(seed, 4, 8, 10, 0.05, 5, 1.3), {});
    found_right += found.size() == 1 && found[0].rank == 5 ? 1 : 0;
  }
  EXPECT_GE(found_right, 19);
}

// Past 64 ranks every rank is compared with statistics over all of them (one sort per case, not
// one per rank): the planted rank is still found, and noise alone still names nobody.
TEST(Stragglers, ManyRanksUseWholeSetStatistics) {
  const auto found = named(make_cases(5, 4, 200, 10, 0.05, 137, 1.3), {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 137);
  EXPECT_NEAR(found[0].excess, 0.3, 0.1);
  EXPECT_LT(found[0].p, 0.01);
  int false_flags = 0;
  for (unsigned seed = 0; seed < 10; ++seed) {
    false_flags += static_cast<int>(named(make_cases(seed, 4, 200, 10, 0.05, -1, 1.0), {}).size());
  }
  EXPECT_EQ(false_flags, 0);
}

TEST(Stragglers, PureNoiseNamesNobody) {
  // 100 seeds of healthy runs, also with heavy-tailed noise (a descheduled iteration now and
  // then, as on shared cores): at most one false flag in all.
  int false_flags = 0;
  for (unsigned seed = 0; seed < 100; ++seed) {
    auto cases = make_cases(seed, 4, 4, 5, 0.08, -1, 1.0);
    std::mt19937 rng(seed + 1000);
    std::uniform_int_distribution<std::size_t> pick(0, cases[0].values.size() - 1);
    for (auto& c : cases) c.values[pick(rng)] *= 3;  // one hiccup per shape
    false_flags += static_cast<int>(named(cases, {}).size());
    // Nor are healthy ranks said to be slower together on shared cores.
    StragglerLimits shared;
    shared.shared = true;
    const Stragglers on_shared = find_stragglers(cases, shared);
    false_flags += static_cast<int>(on_shared.named.size() + on_shared.together.size());
  }
  EXPECT_LE(false_flags, 1);
}

TEST(Stragglers, OneSlowShapeIsNotEnough) {
  auto cases = make_cases(3, 4, 4, 5, 0.02, -1, 1.0);
  for (std::size_t i = 0; i < cases[1].iters; ++i) cases[1].values[i * 4 + 3] *= 2;  // rank 3
  EXPECT_TRUE(named(cases, {}).empty());
  for (std::size_t i = 0; i < cases[2].iters; ++i) cases[2].values[i * 4 + 3] *= 2;
  // Two of four shapes is not most of them either.
  EXPECT_TRUE(named(cases, {}).empty());
  for (std::size_t i = 0; i < cases[3].iters; ++i) cases[3].values[i * 4 + 3] *= 2;
  ASSERT_EQ(named(cases, {}).size(), 1u);
}

TEST(Stragglers, NeedsTheMinimumSlowdownAndBeatsTheSpread) {
  // 5% slower, very consistent: below checks.straggler_slowdown (10%).
  EXPECT_TRUE(named(make_cases(4, 4, 4, 5, 0.001, 1, 1.05), {}).empty());
  // 15% slower but the ranks' own spread is wider (sigma 0.3): not beyond the noise.
  EXPECT_TRUE(named(make_cases(5, 4, 4, 5, 0.3, 1, 1.15), {}).empty());
  // Three iterations of one shape cannot reach p < 0.01 over 4 ranks: no evidence, no name.
  EXPECT_TRUE(named(make_cases(6, 1, 4, 2, 0.01, 1, 3.0), {}).empty());
}

TEST(Stragglers, LatenessAgainstTheIterationsDuration) {
  // Arrival offsets (us) relative to the iteration; the scale is the collective's duration.
  auto cases = make_cases(8, 3, 4, 8, 0.02, -1, 1.0);
  for (auto& c : cases) {
    c.scale = 100;
    for (std::size_t i = 0; i < c.iters; ++i) {
      for (std::size_t r = 0; r < c.world; ++r)
        c.values[i * c.world + r] = (r == 0 ? 60.0 : 0.0) + static_cast<double>(i % 3);
    }
  }
  const auto found = named(cases, {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 0);
  EXPECT_NEAR(found[0].excess, 0.6, 0.05);
}

TEST(Stragglers, TwoRanksCannotSayWhichIsSlow) {
  EXPECT_TRUE(named(make_cases(9, 4, 2, 10, 0.01, 1, 2.0), {}).empty());
}

// What a check says about ranks slower together: a pass that names the group (with the ranks
// that held each back), by how much, and why none is named.
TEST(Stragglers, SlowerTogetherIsSaidWithTheGroup) {
  std::vector<StragglerEvidence> together = {{1, 4, 4, 0.95, 2e-5, {"a", "b"}, {2}},
                                             {2, 4, 4, 1.02, 3e-3, {"b", "c"}, {1}}};
  const Finding f = slower_together_finding("gemm.stragglers", together);
  EXPECT_EQ(f.check, "gemm.stragglers");
  EXPECT_EQ(f.status, CheckStatus::kPass);
  EXPECT_EQ(f.subject, "rank 1, rank 2");
  EXPECT_DOUBLE_EQ(f.value, 1.02);
  EXPECT_EQ(
      f.message.rfind("none named: rank 1, rank 2 slower than the others as a group, by up to 102% "
                      "(p = 0.003)",
                      0),
      0u)
      << f.message;
  EXPECT_NE(f.message.find("none is named"), std::string::npos) << f.message;
  EXPECT_EQ(f.evidence.rfind("in a, b, c;", 0), 0u) << f.evidence;
  // One member held back by another that was not slow enough to be judged itself: both said.
  together = {{3, 2, 2, 0.41, 2e-5, {"a"}, {0}}};
  const Finding pair = slower_together_finding(
      "devices.pairs", together, [](int k) { return "pair " + std::to_string(k) + "->5"; },
      "copy slower than the others");
  EXPECT_EQ(pair.message.rfind(
                "none named: pair 0->5, pair 3->5 copy slower than the others as a group, by "
                "up to 41% (p < 1e-4)",
                0),
            0u)
      << pair.message;
}

// A check that named a straggler keeps one line: the group goes into the named findings'
// evidence; with none named it is the check's own finding.
TEST(Stragglers, SlowerTogetherJoinsTheNamedFindings) {
  const Finding together =
      slower_together_finding("gemm.stragglers", {{1, 4, 4, 0.5, 1e-3, {"a"}, {2}}});
  std::vector<Finding> findings = {
      run_finding("gemm.coverage", CheckStatus::kPass, "4 shapes"),
      run_finding("gemm.stragglers", CheckStatus::kWarn, "rank 3 (host h): 80% slower")};
  EXPECT_FALSE(add_together_to_named(findings, 2, "gemm.stragglers", together));
  EXPECT_TRUE(add_together_to_named(findings, 0, "gemm.stragglers", together));
  EXPECT_EQ(
      findings[1].evidence.rfind("; also rank 1, rank 2 slower than the others as a group", 0), 0u)
      << findings[1].evidence;
  EXPECT_TRUE(findings[0].evidence.empty());
}

// A test that can judge, but only just, says so in its PASS: 7 samples of one case from 4 ranks
// reach p < 0.01 only when a rank is above every other in every sample.
TEST(Stragglers, APassOnTooFewSamplesForAMarginSaysSo) {
  EXPECT_EQ(cannot_judge(1, 7, 4, "ranks", 0.01, "k"), "");
  const std::string note = few_samples_note(1, 7, 4, 0.01, "k");
  EXPECT_NE(note.find("with 7 sample(s) only a rank slower than every other in every one"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("k >= "), std::string::npos) << note;
  EXPECT_EQ(few_samples_note(1, 30, 4, 0.01, "k"), "");
  EXPECT_EQ(few_samples_note(1, 7, 2, 0.01, "k"), "");  // 2 ranks: not judged at all
}

}  // namespace
}  // namespace shakedown
