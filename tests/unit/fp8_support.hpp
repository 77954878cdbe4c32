#pragma once
// Constants the FP8 unit tests share.
#include <limits>

namespace shakedown::fp8::testing_support {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace shakedown::fp8::testing_support
