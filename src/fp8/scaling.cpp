#include "fp8/scaling.hpp"

#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "fp8/scale_math.hpp"

namespace shakedown::fp8 {

namespace {

constexpr int kMaxMargin = 64;

[[noreturn]] void bad_choice(std::string_view what, std::string_view text,
                             const std::vector<std::string_view>& choices) {
  throw UsageError(std::string(what) + " '" + std::string(text) + "' is not " +
                   join_choices(choices) + did_you_mean(text, choices));
}

// A float too small for fp8_max / amax to fit in float would otherwise give an infinite scale and a
// zero scale_inv; TE keeps the largest finite scale instead.
float finite_scale(float scale) {
  return std::isinf(scale) ? FLT_MAX : scale;
}

}  // namespace

Recipe parse_recipe(std::string_view text) {
  const std::string lower = lowercase(text);
  if (lower == "e4m3") return Recipe::kE4M3;
  if (lower == "e5m2") return Recipe::kE5M2;
  if (lower == "hybrid") return Recipe::kHybrid;
  bad_choice("FP8 recipe", text, {"e4m3", "e5m2", "hybrid"});
}

std::string_view name(Recipe recipe) {
  switch (recipe) {
    case Recipe::kE4M3:
      return "e4m3";
    case Recipe::kE5M2:
      return "e5m2";
    case Recipe::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

Format forward_format(Recipe recipe) {
  return recipe == Recipe::kE5M2 ? Format::kE5M2 : Format::kE4M3;
}

Format backward_format(Recipe recipe) {
  return recipe == Recipe::kE4M3 ? Format::kE4M3 : Format::kE5M2;
}

AmaxAlgo parse_amax_algo(std::string_view text) {
  const std::string lower = lowercase(text);
  if (lower == "max") return AmaxAlgo::kMax;
  if (lower == "most_recent") return AmaxAlgo::kMostRecent;
  bad_choice("amax algorithm", text, {"max", "most_recent"});
}

std::string_view name(AmaxAlgo algo) {
  return algo == AmaxAlgo::kMostRecent ? "most_recent" : "max";
}

void validate(const DelayedScaling& recipe) {
  if (recipe.history_len < 1) {
    throw UsageError("FP8 delayed scaling: amax history length " +
                     std::to_string(recipe.history_len) + " must be at least 1 (TE uses 1024)");
  }
  if (recipe.margin < 0 || recipe.margin > kMaxMargin) {
    throw UsageError("FP8 delayed scaling: margin " + std::to_string(recipe.margin) +
                     " must be between 0 and " + std::to_string(kMaxMargin) + " (TE uses 0)");
  }
}

void validate(const CurrentScaling& recipe) {
  if (!std::isfinite(recipe.epsilon) || recipe.epsilon < 0.0f) {
    throw UsageError("FP8 current scaling: epsilon " + std::to_string(recipe.epsilon) +
                     " must be finite and >= 0");
  }
}

ScalingState make_scaling_state(const DelayedScaling& recipe) {
  validate(recipe);
  ScalingState state;
  state.amax_history.assign(static_cast<std::size_t>(recipe.history_len), 0.0f);
  return state;
}

float delayed_scale(const DelayedScaling& recipe, Format format,
                    std::span<const float> amax_history, float previous_scale) {
  validate(recipe);
  if (amax_history.empty()) throw InternalError("fp8::delayed_scale: empty amax history");
  // Exact: a power-of-two multiple of 448 or 57344 stays representable for margin <= 64.
  const float scaled_max = std::ldexp(info(format).max_finite, -recipe.margin);
  float amax = amax_history[0];
  if (recipe.algo == AmaxAlgo::kMax) {
    // fmaxf from 0, as TE reduces: a NaN step does not freeze the scale for the whole window.
    amax = 0.0f;
    for (const float a : amax_history) amax = std::fmax(amax, a);
  }
  if (!std::isfinite(amax) || !(amax > 0.0f)) return previous_scale;
  return finite_scale(scaled_max / amax);
}

void record_amax(ScalingState& state, float amax) {
  if (state.amax_history.empty()) throw InternalError("fp8::record_amax: empty amax history");
  state.amax_history[0] = amax;
}

void update_scale(const DelayedScaling& recipe, Format format, ScalingState& state) {
  std::vector<float>& history = state.amax_history;
  if (history.size() != static_cast<std::size_t>(recipe.history_len)) {
    throw InternalError("fp8::update_scale: amax history has " + std::to_string(history.size()) +
                        " entries but the recipe says " + std::to_string(recipe.history_len));
  }
  state.scale = delayed_scale(recipe, format, history, state.scale);
  for (std::size_t i = history.size() - 1; i > 0; --i) history[i] = history[i - 1];
  history[0] = 0.0f;
  state.scale_inv = 1.0f / state.scale;
}

float current_scale(const CurrentScaling& recipe, Format format, float amax) {
  validate(recipe);
  return current_scale_value(amax, info(format).max_finite, recipe.epsilon);
}

}  // namespace shakedown::fp8
