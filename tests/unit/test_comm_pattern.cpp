// The pattern formulas (pattern_math.hpp): closed forms against brute force over ranks, exactness
// of every partial sum in the dtype itself, and the properties that make errors visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/pattern_math.hpp"
#include "comm_support.hpp"

namespace shakedown {
namespace {

using testing_support::kAllDTypes;
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMax};
constexpr int kPatternRankCounts[] = {1, 2, 3, 4, 5, 7, 8, 16, 100, 1000, 4096};

PatternSpec spec_for(DType t, ReduceOp op, int n, std::uint64_t seed = 42, bool reduces = true) {
  PatternSpec s;
  s.seed = seed;
  s.dtype = t;
  s.op = op;
  s.nranks = n;
  s.reduces = reduces;
  return s;
}

std::string label(DType t, ReduceOp op, int n) {
  return std::string(dtype_name(t)) + "/" + std::string(reduce_op_name(op)) +
         "/n=" + std::to_string(n);
}

// Indices to test: the first few, some far away, some random; fewer at large n (brute force is
// O(n) per index).
std::vector<std::uint64_t> indices_for(int n) {
  std::vector<std::uint64_t> v;
  const std::uint64_t count = std::max<std::uint64_t>(64, 400000 / static_cast<std::uint64_t>(n));
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(count, 32); ++i) v.push_back(i);
  for (std::uint64_t i : {1ull << 20, (1ull << 32) + 5, (1ull << 40) - 1, ~0ull}) v.push_back(i);
  std::mt19937_64 rng(static_cast<std::uint64_t>(n));
  while (v.size() < count) v.push_back(rng() % (1ull << 36));
  return v;
}

// The dtype's own rounding: what a reduction that stores partial sums in the dtype sees.
double round_to(DType t, double v) {
  unsigned char buf[8];
  store_element(buf, t, 0, v);
  return load_element(buf, t, 0);
}

TEST(CommPattern, Limits) {
  EXPECT_EQ(pattern_limit(DType::kFloat32), 1u << 24);
  EXPECT_EQ(pattern_limit(DType::kBFloat16), 256u);
  EXPECT_EQ(pattern_limit(DType::kFloat16), 2048u);
  EXPECT_EQ(pattern_limit(DType::kInt32), 2147483647u);
  EXPECT_EQ(pattern_limit(DType::kFp8E4M3), 16u);
  EXPECT_EQ(pattern_limit(DType::kFp8E5M2), 8u);
}

TEST(CommPattern, ReducesFollowsTheTable) {
  for (const CollectiveInfo& info : collective_table()) {
    EXPECT_EQ(pattern_reduces(info.kind), info.reduces) << info.name;
    PatternSpec s;
    s.reduces = !info.reduces;
    EXPECT_EQ(pattern_spec_for(info.kind, s).reduces, info.reduces) << info.name;
    EXPECT_EQ(pattern_params(info.kind, s).reduces, info.reduces) << info.name;
  }
}

// Every input value is an integer in [-L, L], exact in the dtype.
TEST(CommPattern, InputsAreExactIntegers) {
  for (DType t : kAllDTypes) {
    const double limit = static_cast<double>(pattern_limit(t));
    for (bool reduces : {true, false}) {
      for (ReduceOp op : kOps) {
        for (int n : {1, 2, 3, 8, 100, 4096}) {
          const PatternParams p = pattern_params(spec_for(t, op, n, 9, reduces));
          for (int r : {0, 1, n / 2, n - 1}) {
            if (r >= n) continue;
            for (std::uint64_t i = 0; i < 2000; ++i) {
              const double v = pattern_input(p, r, i);
              ASSERT_EQ(v, std::floor(v)) << label(t, op, n);
              ASSERT_LE(std::fabs(v), limit) << label(t, op, n);
              ASSERT_EQ(round_to(t, v), v) << label(t, op, n);
            }
          }
        }
      }
    }
  }
}

// pattern_reduced == the reduction written as a loop over ranks, for every dtype, op and n.
TEST(CommPattern, ReducedMatchesBruteForce) {
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kOps) {
      for (int n : kPatternRankCounts) {
        for (std::uint64_t seed : {1ull, 0xdeadbeefull}) {
          const PatternSpec s = spec_for(t, op, n, seed);
          const PatternParams p = pattern_params(s);
          for (std::uint64_t i : indices_for(n)) {
            double want = pattern_input(p, 0, i);
            for (int r = 1; r < n; ++r) {
              const double v = pattern_input(p, r, i);
              want = op == ReduceOp::kSum ? want + v : std::max(want, v);
            }
            ASSERT_EQ(pattern_reduced(p, i), want) << label(t, op, n) << " index " << i;
          }
          // The spec overloads agree with the params ones.
          EXPECT_EQ(pattern_reduced(s, 12345), pattern_reduced(p, 12345));
          EXPECT_EQ(pattern_input(s, n - 1, 12345), pattern_input(p, n - 1, 12345));
        }
      }
    }
  }
}

// Sums are exact in ANY order: the positive values of an index add up to at most L, and so do the
// negative ones, so no partial sum leaves [-L, L]. Then simulate the reduction in the dtype itself
// (each partial stored in the dtype) forward, backward, as a pairwise tree and shuffled.
TEST(CommPattern, EveryPartialSumIsExactInTheDtype) {
  std::mt19937_64 rng(5);
  for (DType t : kAllDTypes) {
    const double limit = static_cast<double>(pattern_limit(t));
    for (int n : kPatternRankCounts) {
      const PatternParams p = pattern_params(spec_for(t, ReduceOp::kSum, n, 77));
      std::vector<std::uint64_t> idx = indices_for(n);
      idx.resize(std::min<std::size_t>(idx.size(), 3000));
      std::vector<double> v(static_cast<std::size_t>(n));
      for (std::uint64_t i : idx) {
        double pos = 0, neg = 0;
        for (int r = 0; r < n; ++r) {
          v[static_cast<std::size_t>(r)] = pattern_input(p, r, i);
          (v[static_cast<std::size_t>(r)] > 0 ? pos : neg) += v[static_cast<std::size_t>(r)];
        }
        ASSERT_LE(pos, limit) << label(t, ReduceOp::kSum, n) << " index " << i;
        ASSERT_GE(neg, -limit) << label(t, ReduceOp::kSum, n) << " index " << i;
        const double want = pattern_reduced(p, i);

        auto chain = [&](const std::vector<double>& order) {
          if (order.empty()) return std::nan("");
          double acc = order.front();
          for (std::size_t k = 1; k < order.size(); ++k) {
            const double exact = acc + order[k];
            acc = round_to(t, exact);
            if (acc != exact) return std::nan("");
          }
          return acc;
        };
        std::function<double(std::size_t, std::size_t)> tree = [&](std::size_t lo,
                                                                   std::size_t hi) -> double {
          if (hi - lo == 1) return v[lo];
          const std::size_t mid = lo + (hi - lo) / 2;
          const double exact = tree(lo, mid) + tree(mid, hi);
          return round_to(t, exact) == exact ? exact : std::nan("");
        };
        EXPECT_EQ(chain(v), want) << "forward " << label(t, ReduceOp::kSum, n) << " index " << i;
        std::vector<double> w(v.rbegin(), v.rend());
        EXPECT_EQ(chain(w), want) << "reverse " << label(t, ReduceOp::kSum, n) << " index " << i;
        EXPECT_EQ(tree(0, v.size()), want) << "tree " << label(t, ReduceOp::kSum, n);
        std::shuffle(w.begin(), w.end(), rng);
        EXPECT_EQ(chain(w), want) << "shuffled " << label(t, ReduceOp::kSum, n);
        // Worst orders: all positives first, then all negatives (and the reverse).
        std::sort(w.begin(), w.end());
        EXPECT_EQ(chain(w), want) << "ascending " << label(t, ReduceOp::kSum, n);
        std::reverse(w.begin(), w.end());
        EXPECT_EQ(chain(w), want) << "descending " << label(t, ReduceOp::kSum, n);
      }
    }
  }
}

// The sum range is used: at small n the values reach close to L / n (not just 0 and 1).
TEST(CommPattern, SumValuesUseTheRange) {
  for (DType t : kAllDTypes) {
    const std::uint64_t limit = pattern_limit(t);
    for (int n : {1, 2, 3, 8}) {
      const PatternParams p = pattern_params(spec_for(t, ReduceOp::kSum, n));
      const double a = static_cast<double>(limit / static_cast<std::uint64_t>(n));
      double lo = 0, hi = 0;
      for (std::uint64_t i = 0; i < 20000; ++i) {
        for (int r = 0; r < n; ++r) {
          lo = std::min(lo, pattern_input(p, r, i));
          hi = std::max(hi, pattern_input(p, r, i));
        }
      }
      EXPECT_LE(hi, a);
      EXPECT_GE(lo, -a);
      EXPECT_GE(hi - lo, std::min(a, 16.0)) << label(t, ReduceOp::kSum, n);
    }
  }
}

// Within one index the ranks hold different values while the range allows it, so one rank's
// data in place of another's changes the result.
TEST(CommPattern, RanksDifferWithinAnIndex) {
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kOps) {
      for (int n : {2, 3, 4, 5, 7, 8}) {
        const PatternParams p = pattern_params(spec_for(t, op, n));
        const bool distinct = static_cast<std::uint64_t>(n) < p.m;
        std::uint64_t same = 0;
        for (std::uint64_t i = 0; i < 1000; ++i) {
          std::set<double> values;
          for (int r = 0; r < n; ++r) values.insert(pattern_input(p, r, i));
          if (distinct) {
            ASSERT_EQ(values.size(), static_cast<std::size_t>(n)) << label(t, op, n);
          }
          same += values.size() == 1;
        }
        EXPECT_EQ(same, 0u) << label(t, op, n);
      }
    }
  }
}

// The reduced value changes with the index (a chunk at the wrong offset shows) and is not always
// zero (a collective that leaves zeros behind shows), at every rank count.
TEST(CommPattern, ReducedVariesWithIndex) {
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kOps) {
      for (int n : kPatternRankCounts) {
        const PatternParams p = pattern_params(spec_for(t, op, n));
        std::set<double> values;
        std::uint64_t zeros = 0, equal_neighbours = 0;
        const std::uint64_t count = 4000;
        for (std::uint64_t i = 0; i < count; ++i) {
          const double v = pattern_reduced(p, i);
          values.insert(v);
          zeros += v == 0;
          equal_neighbours += v == pattern_reduced(p, i + 1);
        }
        EXPECT_GE(values.size(), 2u) << label(t, op, n);
        EXPECT_LT(zeros, count * 6 / 10) << label(t, op, n);
        EXPECT_LT(equal_neighbours, count * 6 / 10) << label(t, op, n);
      }
    }
  }
}

// With more ranks than L, the window of nonzero ranks rotates: every rank contributes to some
// elements (a rank that sends zeros or stale data is still caught), and for max every rank is the
// maximum somewhere.
TEST(CommPattern, EveryRankMatters) {
  for (DType t : {DType::kFp8E5M2, DType::kFp8E4M3, DType::kBFloat16}) {
    for (ReduceOp op : kOps) {
      const int n = 1000;
      const PatternParams p = pattern_params(spec_for(t, op, n));
      std::vector<int> nonzero(static_cast<std::size_t>(n)), argmax(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < 20000; ++i) {
        const double top = pattern_reduced(p, i);
        for (int r = 0; r < n; ++r) {
          const double v = pattern_input(p, r, i);
          nonzero[static_cast<std::size_t>(r)] += v != 0;
          argmax[static_cast<std::size_t>(r)] += v == top;
        }
      }
      for (int r = 0; r < n; ++r) {
        ASSERT_GT(nonzero[static_cast<std::size_t>(r)], 0) << label(t, op, n) << " rank " << r;
        if (op == ReduceOp::kMax) {
          ASSERT_GT(argmax[static_cast<std::size_t>(r)], 0) << label(t, op, n) << " rank " << r;
        }
      }
    }
  }
}

// Non-reducing pattern: the whole range [-L, L], different per rank, per index and per seed.
TEST(CommPattern, NonReducingUsesTheWholeRange) {
  for (DType t : kAllDTypes) {
    const double limit = static_cast<double>(pattern_limit(t));
    for (int n : {1, 2, 8, 1000, 4096}) {
      const PatternParams p = pattern_params(spec_for(t, ReduceOp::kSum, n, 3, false));
      const PatternParams other_seed = pattern_params(spec_for(t, ReduceOp::kSum, n, 4, false));
      double lo = 0, hi = 0;
      std::uint64_t same_rank = 0, same_next = 0, same_seed = 0;
      const std::uint64_t count = 4000;
      const int r0 = n - 1;
      const int r1 = n > 1 ? n - 2 : 0;
      for (std::uint64_t i = 0; i < count; ++i) {
        const double v = pattern_input(p, r0, i);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        same_rank += v == pattern_input(p, r1, i);
        same_next += v == pattern_input(p, r0, i + 1);
        same_seed += v == pattern_input(other_seed, r0, i);
      }
      if (limit <= 256) {
        EXPECT_EQ(lo, -limit) << label(t, ReduceOp::kSum, n);
        EXPECT_EQ(hi, limit) << label(t, ReduceOp::kSum, n);
      } else {
        EXPECT_GT(hi - lo, limit) << label(t, ReduceOp::kSum, n);
      }
      // Chance agreement is 1 / (2L + 1) (1/17 for E5M2): allow some slack.
      const std::uint64_t slack = count / 8;
      if (n > 1) {
        EXPECT_LT(same_rank, slack) << label(t, ReduceOp::kSum, n);
      }
      EXPECT_LT(same_next, slack) << label(t, ReduceOp::kSum, n);
      EXPECT_LT(same_seed, slack) << label(t, ReduceOp::kSum, n);
    }
  }
}

// The op does not change a non-reducing pattern; the seed changes the reducing one.
TEST(CommPattern, SeedAndOp) {
  for (DType t : kAllDTypes) {
    const PatternParams sum = pattern_params(spec_for(t, ReduceOp::kSum, 4, 3, false));
    const PatternParams max = pattern_params(spec_for(t, ReduceOp::kMax, 4, 3, false));
    for (std::uint64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(pattern_input(sum, 2, i), pattern_input(max, 2, i));
    }
    for (ReduceOp op : kOps) {
      const PatternParams a = pattern_params(spec_for(t, op, 4, 3));
      const PatternParams b = pattern_params(spec_for(t, op, 4, 5));
      std::uint64_t same = 0;
      for (std::uint64_t i = 0; i < 1000; ++i)
        same += pattern_reduced(a, i) == pattern_reduced(b, i);
      EXPECT_LT(same, 600u) << label(t, op, 4);
    }
  }
}

// The formulas are constant expressions (nothing hidden that a kernel could not run).
TEST(CommPattern, Constexpr) {
  constexpr PatternSpec s{7, DType::kBFloat16, ReduceOp::kSum, 3, 0, true};
  constexpr double in = pattern_input(s, 1, 10);
  constexpr double red = pattern_reduced(s, 10);
  constexpr double out = expected_output(CollectiveKind::kAllReduce, s, CollectiveCounts{}, 2, 10);
  static_assert(red == out);
  static_assert(in >= -85 && in <= 85);
  EXPECT_EQ(red, pattern_input(s, 0, 10) + pattern_input(s, 1, 10) + pattern_input(s, 2, 10));
}

TEST(CommPattern, ExpectedOutputRules) {
  const PatternSpec s = spec_for(DType::kFloat32, ReduceOp::kSum, 5, 11);
  CollectiveCounts c;
  c.unit = 7;
  for (std::uint64_t i = 0; i < 35; ++i) {
    const PatternSpec nr = pattern_spec_for(CollectiveKind::kAllGather, s);
    const PatternSpec rd = pattern_spec_for(CollectiveKind::kAllReduce, s);
    for (int rank = 0; rank < 5; ++rank) {
      EXPECT_EQ(expected_output(CollectiveKind::kAllReduce, s, c, rank, i), pattern_reduced(rd, i));
      EXPECT_EQ(expected_output(CollectiveKind::kReduceScatter, s, c, rank, i % 7),
                pattern_reduced(rd, static_cast<std::uint64_t>(rank) * 7 + i % 7));
      EXPECT_EQ(expected_output(CollectiveKind::kAllGather, s, c, rank, i),
                pattern_input(nr, static_cast<int>(i / 7), i % 7));
      EXPECT_EQ(
          expected_output(CollectiveKind::kAllToAll, s, c, rank, i),
          pattern_input(nr, static_cast<int>(i / 7), static_cast<std::uint64_t>(rank) * 7 + i % 7));
      EXPECT_EQ(expected_output(CollectiveKind::kSendRecv, s, c, rank, i),
                pattern_input(nr, (rank + 4) % 5, i));
      PatternSpec b = s;
      b.root = 3;
      EXPECT_EQ(expected_output(CollectiveKind::kBroadcast, b, c, rank, i),
                pattern_input(nr, 3, i));
      EXPECT_EQ(input_value(CollectiveKind::kAllGather, s, rank, i), pattern_input(nr, rank, i));
      EXPECT_EQ(input_value(CollectiveKind::kReduceScatter, s, rank, i),
                pattern_input(rd, rank, i));
    }
  }
  c.unit = 0;  // no division by zero
  EXPECT_EQ(expected_output(CollectiveKind::kAllGather, s, c, 0, 0), 0.0);
  EXPECT_EQ(expected_output(CollectiveKind::kAllToAll, s, c, 0, 0), 0.0);
}

}  // namespace
}  // namespace shakedown
