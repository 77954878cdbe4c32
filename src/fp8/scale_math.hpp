#pragma once
// The current-scaling formula, shared by fp8/scaling.cpp and the device kernel that computes a
// scale where the amax is (kernels/train_kernels.cu). Compiled by nvcc too (C++17).
#include <cfloat>

#include "core/host_device.hpp"

namespace shakedown::fp8 {

// max_finite / max(amax, epsilon); 1 when that clamped amax is 0, infinite or NaN; FLT_MAX when
// the quotient overflows float.
SD_HOST_DEVICE inline float current_scale_value(float amax, float max_finite, float epsilon) {
  const float clamped = amax < epsilon ? epsilon : amax;
  const bool finite = clamped == clamped && clamped <= FLT_MAX && clamped >= -FLT_MAX;
  if (!finite || clamped == 0.0f) return 1.0f;
  const float q = max_finite / clamped;
  return q <= FLT_MAX && q >= -FLT_MAX ? q : FLT_MAX;
}

}  // namespace shakedown::fp8
