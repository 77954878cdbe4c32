// Transformer Engine's scaling recipes: parsing, validation, the delayed scale's edge cases, a
// history roll worked by hand, and current scaling.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fp8/scaling.hpp"
#include "fp8_support.hpp"

namespace shakedown::fp8 {
namespace {

using testing_support::kInf;
using testing_support::kNaN;

template <class F>
std::string usage_message(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

// ---- parsing and names ----

TEST(Fp8Recipe, ParseNameAndFormats) {
  EXPECT_EQ(parse_recipe("e4m3"), Recipe::kE4M3);
  EXPECT_EQ(parse_recipe("E5M2"), Recipe::kE5M2);
  EXPECT_EQ(parse_recipe("Hybrid"), Recipe::kHybrid);
  for (Recipe r : {Recipe::kE4M3, Recipe::kE5M2, Recipe::kHybrid}) {
    EXPECT_EQ(parse_recipe(name(r)), r);
  }
  EXPECT_EQ(forward_format(Recipe::kHybrid), Format::kE4M3);
  EXPECT_EQ(backward_format(Recipe::kHybrid), Format::kE5M2);
  EXPECT_EQ(forward_format(Recipe::kE4M3), Format::kE4M3);
  EXPECT_EQ(backward_format(Recipe::kE4M3), Format::kE4M3);
  EXPECT_EQ(forward_format(Recipe::kE5M2), Format::kE5M2);
  EXPECT_EQ(backward_format(Recipe::kE5M2), Format::kE5M2);

  const std::string what = usage_message([] { parse_recipe("hybird"); });
  EXPECT_NE(what.find("e4m3, e5m2 or hybrid"), std::string::npos) << what;
  EXPECT_NE(what.find("did you mean \"hybrid\""), std::string::npos) << what;
}

TEST(Fp8Recipe, ParseAmaxAlgo) {
  EXPECT_EQ(parse_amax_algo("max"), AmaxAlgo::kMax);
  EXPECT_EQ(parse_amax_algo("MOST_RECENT"), AmaxAlgo::kMostRecent);
  EXPECT_EQ(name(AmaxAlgo::kMax), "max");
  EXPECT_EQ(name(AmaxAlgo::kMostRecent), "most_recent");
  const std::string what = usage_message([] { parse_amax_algo("most-recent"); });
  EXPECT_NE(what.find("max or most_recent"), std::string::npos) << what;
}

// ---- validation and state ----

TEST(Fp8Delayed, Validation) {
  EXPECT_NO_THROW(validate(DelayedScaling{}));
  EXPECT_NE(usage_message([] {
              validate(DelayedScaling{0, AmaxAlgo::kMax, 0});
            }).find("history length 0"),
            std::string::npos);
  EXPECT_NE(usage_message([] {
              validate(DelayedScaling{16, AmaxAlgo::kMax, -1});
            }).find("margin -1"),
            std::string::npos);
  EXPECT_THROW(validate(DelayedScaling{16, AmaxAlgo::kMax, 65}), UsageError);
  EXPECT_NO_THROW(validate(DelayedScaling{1, AmaxAlgo::kMax, 64}));
  EXPECT_THROW(make_scaling_state(DelayedScaling{0, AmaxAlgo::kMax, 0}), UsageError);
  const std::vector<float> one{1.0f};
  EXPECT_THROW(delayed_scale(DelayedScaling{1, AmaxAlgo::kMax, -2}, Format::kE4M3, one, 1.0f),
               UsageError);

  EXPECT_NO_THROW(validate(CurrentScaling{}));
  EXPECT_THROW(validate(CurrentScaling{-1.0f}), UsageError);
  EXPECT_THROW(validate(CurrentScaling{kNaN}), UsageError);
  EXPECT_THROW(validate(CurrentScaling{kInf}), UsageError);
}

TEST(Fp8Delayed, FreshStateIsNeutral) {
  const ScalingState s = make_scaling_state(DelayedScaling{});
  EXPECT_EQ(s.amax_history, std::vector<float>(1024, 0.0f));
  EXPECT_EQ(s.scale, 1.0f);
  EXPECT_EQ(s.scale_inv, 1.0f);
}

TEST(Fp8Delayed, MisusedStateIsAnInternalError) {
  ScalingState empty;
  EXPECT_THROW(record_amax(empty, 1.0f), InternalError);
  EXPECT_THROW(delayed_scale(DelayedScaling{}, Format::kE4M3, {}, 1.0f), InternalError);
  ScalingState s = make_scaling_state(DelayedScaling{4, AmaxAlgo::kMax, 0});
  EXPECT_THROW(update_scale(DelayedScaling{5, AmaxAlgo::kMax, 0}, Format::kE4M3, s), InternalError);
}

// ---- the delayed scale ----

TEST(Fp8Delayed, ScaleIsScaledMaxOverAmax) {
  const DelayedScaling r{1, AmaxAlgo::kMax, 0};
  const std::vector<float> two{2.0f};
  EXPECT_EQ(delayed_scale(r, Format::kE4M3, two, 1.0f), 224.0f);    // 448 / 2
  EXPECT_EQ(delayed_scale(r, Format::kE5M2, two, 1.0f), 28672.0f);  // 57344 / 2
  // margin m divides by 2^m
  EXPECT_EQ(delayed_scale({1, AmaxAlgo::kMax, 1}, Format::kE4M3, two, 1.0f), 112.0f);
  EXPECT_EQ(delayed_scale({1, AmaxAlgo::kMax, 3}, Format::kE4M3, two, 1.0f), 28.0f);
  const std::vector<float> seven{7.0f};
  EXPECT_EQ(delayed_scale({1, AmaxAlgo::kMax, 2}, Format::kE4M3, seven, 1.0f), 16.0f);  // 112 / 7
  // Not a power of two: the one float division TE does.
  const std::vector<float> three{3.0f};
  EXPECT_EQ(delayed_scale(r, Format::kE4M3, three, 1.0f), 448.0f / 3.0f);
}

TEST(Fp8Delayed, NoUsableAmaxKeepsThePreviousScale) {
  const float previous = 3.5f;
  for (AmaxAlgo algo : {AmaxAlgo::kMax, AmaxAlgo::kMostRecent}) {
    const DelayedScaling r{1, algo, 0};
    for (float a : {0.0f, -0.0f, kInf, kNaN, -kNaN}) {
      const std::vector<float> h{a};
      EXPECT_EQ(delayed_scale(r, Format::kE4M3, h, previous), previous) << a;
    }
  }
}

TEST(Fp8Delayed, ScaleThatOverflowsBecomesFltMax) {
  const DelayedScaling r{1, AmaxAlgo::kMax, 0};
  // 448 / 2^-149 and 448 / 1e-36 both exceed FLT_MAX.
  for (float a : {std::numeric_limits<float>::denorm_min(), 1.0e-36f}) {
    const std::vector<float> h{a};
    EXPECT_EQ(delayed_scale(r, Format::kE4M3, h, 1.0f), FLT_MAX) << a;
  }
  ScalingState s = make_scaling_state(r);
  record_amax(s, std::numeric_limits<float>::denorm_min());
  update_scale(r, Format::kE5M2, s);
  EXPECT_EQ(s.scale, FLT_MAX);
  EXPECT_EQ(s.scale_inv, 1.0f / FLT_MAX);
  EXPECT_GT(s.scale_inv, 0.0f);  // a usable (subnormal) scale_inv, not 0
}

TEST(Fp8Delayed, MaxVersusMostRecent) {
  const std::vector<float> h{1.0f, 8.0f, 2.0f};                                     // newest first
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMax, 0}, Format::kE4M3, h, 1.0f), 56.0f);  // 448 / 8
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMostRecent, 0}, Format::kE4M3, h, 1.0f), 448.0f);
}

TEST(Fp8Delayed, MaxSkipsNaNButNotInfinity) {
  // TE reduces the window with fmaxf from 0: a NaN entry is skipped...
  const std::vector<float> nan_and_four{kNaN, 4.0f, 0.0f};
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMax, 0}, Format::kE4M3, nan_and_four, 9.0f), 112.0f);
  const std::vector<float> only_nan{kNaN, 0.0f, 0.0f};
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMax, 0}, Format::kE4M3, only_nan, 9.0f), 9.0f);
  // ...while most_recent sees it and keeps the previous scale.
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMostRecent, 0}, Format::kE4M3, nan_and_four, 9.0f), 9.0f);
  // An infinite entry wins the max: the previous scale is kept while it is in the window.
  const std::vector<float> inf_in_window{4.0f, kInf, 2.0f};
  EXPECT_EQ(delayed_scale({3, AmaxAlgo::kMax, 0}, Format::kE4M3, inf_in_window, 9.0f), 9.0f);
}

// ---- the per-step update, worked by hand ----

TEST(Fp8Delayed, HistoryRollsOverFiveSteps) {
  // history_len 3, E4M3 (448), margin 0. Step by step (history newest first):
  //  1. record 2:   [2, 0, 0]   max 2 -> 448/2 = 224;   roll -> [0, 2, 0]
  //  2. record 8:   [8, 2, 0]   max 8 -> 448/8 = 56;    roll -> [0, 8, 2]
  //  3. record 1:   [1, 8, 2]   max 8 -> 56;            roll -> [0, 1, 8]   (the 2 drops)
  //  4. record NaN: [NaN, 1, 8] max 8 (NaN skipped) -> 56; roll -> [0, NaN, 1] (the 8 drops)
  //  5. record 0.5: [0.5, NaN, 1] max 1 -> 448;        roll -> [0, 0.5, NaN]
  //  6. record 0:   [0, 0.5, NaN] max 0.5 -> 896;      roll -> [0, 0, 0.5]
  // most_recent on the same amaxes: 224, 448/8 = 56, 448/1 = 448, NaN keeps 448, 896, 0 keeps 896.
  const DelayedScaling max_recipe{3, AmaxAlgo::kMax, 0};
  const DelayedScaling recent_recipe{3, AmaxAlgo::kMostRecent, 0};
  ScalingState by_max = make_scaling_state(max_recipe);
  ScalingState by_recent = make_scaling_state(recent_recipe);

  struct Step {
    float amax;
    float max_scale;
    std::vector<float> history_after;  // by_max, after the roll
    float recent_scale;
  };
  const std::vector<Step> steps{
      {2.0f, 224.0f, {0.0f, 2.0f, 0.0f}, 224.0f}, {8.0f, 56.0f, {0.0f, 8.0f, 2.0f}, 56.0f},
      {1.0f, 56.0f, {0.0f, 1.0f, 8.0f}, 448.0f},  {kNaN, 56.0f, {0.0f, kNaN, 1.0f}, 448.0f},
      {0.5f, 448.0f, {0.0f, 0.5f, kNaN}, 896.0f}, {0.0f, 896.0f, {0.0f, 0.0f, 0.5f}, 896.0f},
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    SCOPED_TRACE("step " + std::to_string(i + 1));
    record_amax(by_max, s.amax);
    record_amax(by_recent, s.amax);
    update_scale(max_recipe, Format::kE4M3, by_max);
    update_scale(recent_recipe, Format::kE4M3, by_recent);
    EXPECT_EQ(by_max.scale, s.max_scale);
    EXPECT_EQ(by_max.scale_inv, 1.0f / s.max_scale);
    EXPECT_EQ(by_recent.scale, s.recent_scale);
    EXPECT_EQ(by_recent.scale_inv, 1.0f / s.recent_scale);
    ASSERT_EQ(by_max.amax_history.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      const float want = s.history_after[k];
      const float got = by_max.amax_history[k];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << "slot " << k;
      } else {
        EXPECT_EQ(got, want) << "slot " << k;
      }
    }
  }
}

TEST(Fp8Delayed, AllZeroAmaxStepRollsAndKeepsTheScale) {
  // As TE's single-tensor kernel (docs/architecture.md "FP8 scaling"): a step whose amax is 0
  // still rolls the history; with nothing above 0 in the window the previous scale stays.
  const DelayedScaling recipe{2, AmaxAlgo::kMax, 0};
  ScalingState s = make_scaling_state(recipe);
  record_amax(s, 4.0f);
  update_scale(recipe, Format::kE4M3, s);  // 448 / 4 = 112; history [0, 4]
  EXPECT_EQ(s.scale, 112.0f);
  record_amax(s, 0.0f);
  update_scale(recipe, Format::kE4M3, s);  // window [0, 4]: max 4, 112 again; roll -> [0, 0]
  EXPECT_EQ(s.scale, 112.0f);
  EXPECT_EQ(s.amax_history, (std::vector<float>{0.0f, 0.0f}));
  record_amax(s, 0.0f);
  update_scale(recipe, Format::kE4M3, s);  // window all 0: no information, 112 kept
  EXPECT_EQ(s.scale, 112.0f);
  EXPECT_EQ(s.scale_inv, 1.0f / 112.0f);
}

TEST(Fp8Delayed, RecordReplacesSlotZeroAndLengthOneWorks) {
  const DelayedScaling r{1, AmaxAlgo::kMax, 0};
  ScalingState s = make_scaling_state(r);
  record_amax(s, 100.0f);
  record_amax(s, 4.0f);  // replaces, does not merge
  EXPECT_EQ(s.amax_history[0], 4.0f);
  update_scale(r, Format::kE5M2, s);
  EXPECT_EQ(s.scale, 14336.0f);  // 57344 / 4
  EXPECT_EQ(s.scale_inv, 1.0f / 14336.0f);
  EXPECT_EQ(s.amax_history[0], 0.0f);
  // Nothing recorded next step: amax 0, the scale stays.
  update_scale(r, Format::kE5M2, s);
  EXPECT_EQ(s.scale, 14336.0f);
}

// ---- current scaling ----

TEST(Fp8Current, ScaleAndEpsilonClamp) {
  EXPECT_EQ(current_scale({}, Format::kE4M3, 2.0f), 224.0f);
  EXPECT_EQ(current_scale({}, Format::kE5M2, 2.0f), 28672.0f);
  EXPECT_EQ(current_scale({4.0f}, Format::kE4M3, 2.0f), 112.0f);  // clamped up to 4
  EXPECT_EQ(current_scale({4.0f}, Format::kE4M3, 8.0f), 56.0f);   // above epsilon: unchanged
  EXPECT_EQ(current_scale({1.0e-3f}, Format::kE4M3, 0.0f), 448.0f / 1.0e-3f);
}

TEST(Fp8Current, ZeroInfinityAndNaNGiveOne) {
  for (float a : {0.0f, kInf, kNaN}) {
    EXPECT_EQ(current_scale({}, Format::kE4M3, a), 1.0f) << a;
    EXPECT_EQ(current_scale({1.0f}, Format::kE5M2, a == 0.0f ? kInf : a), 1.0f) << a;
  }
  // The tiny amax case overflows float like the delayed scale does.
  EXPECT_EQ(current_scale({}, Format::kE4M3, std::numeric_limits<float>::denorm_min()), FLT_MAX);
}

}  // namespace
}  // namespace shakedown::fp8
