#pragma once
// Transformer Engine's per-tensor scaling recipes as data plus one pure function each
// (Transformer Engine's scaling recipes). The CPU and GPU paths both call these, so a
// scale computed on either side is bit-identical.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "fp8/fp8.hpp"

namespace shakedown::fp8 {

// Which format each tensor role uses. hybrid: E4M3 forward (activations, weights), E5M2 backward
// (gradients) - TE's default, because gradients need range more than precision.
enum class Recipe : std::uint8_t { kE4M3, kE5M2, kHybrid };
// "e4m3" | "e5m2" | "hybrid" (case-insensitive); UsageError naming them otherwise.
Recipe parse_recipe(std::string_view text);
std::string_view name(Recipe recipe);
Format forward_format(Recipe recipe);   // activations and weights
Format backward_format(Recipe recipe);  // gradients

enum class AmaxAlgo : std::uint8_t { kMax, kMostRecent };
// "max" | "most_recent" (case-insensitive); UsageError naming them otherwise.
AmaxAlgo parse_amax_algo(std::string_view text);
std::string_view name(AmaxAlgo algo);

struct DelayedScaling {
  int history_len = 1024;  // >= 1
  AmaxAlgo algo = AmaxAlgo::kMax;
  // 0..64: scale = fp8_max * 2^-margin / amax, headroom for amax growing between updates. Larger
  // margins have no use and only push scales toward float underflow.
  int margin = 0;
};
// UsageError naming the bad field unless history_len >= 1 and 0 <= margin <= 64.
void validate(const DelayedScaling& recipe);

struct CurrentScaling {
  float epsilon = 0.0f;  // amax is clamped to at least epsilon; finite and >= 0
};
// UsageError unless epsilon is finite and >= 0.
void validate(const CurrentScaling& recipe);

// The per-tensor state delayed scaling keeps between steps. history[0] is this step's amax,
// history[i] the amax of i steps ago. (TE keeps the same window rotated the other way; the window
// holds the same values, so the scales are the same.)
struct ScalingState {
  std::vector<float> amax_history;  // history_len entries, 0 when unused
  float scale = 1.0f;
  float scale_inv = 1.0f;
};

// Validates the recipe; history of history_len zeros, scale = scale_inv = 1.
ScalingState make_scaling_state(const DelayedScaling& recipe);

// TE's delayed scale: scaled_max = fp8_max * 2^-margin; amax = max over the whole window (kMax, as
// TE's fmaxf reduction: NaN entries are skipped, an infinite one wins) or amax_history[0]
// (kMostRecent); scale = scaled_max / amax when amax is finite and > 0, else previous_scale (no
// information: keep what worked). A scale that overflows float (amax tiny) becomes FLT_MAX.
// InternalError on an empty history.
float delayed_scale(const DelayedScaling& recipe, Format format,
                    std::span<const float> amax_history, float previous_scale);

// Stores this step's amax (already reduced across the ranks that share the tensor) in slot 0,
// replacing what was there. InternalError on an empty history.
void record_amax(ScalingState& state, float amax);
// TE's update at the end of a step, in TE's order: first scale = delayed_scale(history,
// state.scale), with slot 0 holding this step's amax; then the history rolls (slot i -> i+1, the
// oldest entry drops, slot 0 = 0 for the next step); then scale_inv = 1 / scale. InternalError if
// the history length is not recipe.history_len.
void update_scale(const DelayedScaling& recipe, Format format, ScalingState& state);

// TE's current scaling: scale = fp8_max / max(amax, epsilon); 1 when that clamped amax is 0,
// infinite or NaN; FLT_MAX when the quotient overflows float.
float current_scale(const CurrentScaling& recipe, Format format, float amax);

}  // namespace shakedown::fp8
