#pragma once
// The elementwise arithmetic the host and device training steps share (train/step.cpp,
// kernels/train_kernels.cu), one source for both. Compiled by nvcc too (C++17).
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace shakedown::train {

// The MLP's activation: GeLU in its sigmoid form, g sigmoid(1.702 g).
SD_HOST_DEVICE inline float gelu_sigmoid(float g) {
  return g / (1.0f + expf(-1.702f * g));
}

// One Adam step of one fp32 master weight: g = grad * grad_scale; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; master -= lr (m / c1) / (sqrt(v / c2) + eps).
struct AdamParams {
  float lr = 1e-4f;
  float b1 = 0.9f;
  float b2 = 0.999f;
  float eps = 1e-8f;
  float c1 = 1;  // 1 - b1^t
  float c2 = 1;  // 1 - b2^t
  float grad_scale = 1;
};

// The bias corrections for step t (1, 2, ...).
inline AdamParams adam_params(int t, float grad_scale) {
  AdamParams p;
  p.c1 = 1.0f - std::pow(p.b1, static_cast<float>(t));
  p.c2 = 1.0f - std::pow(p.b2, static_cast<float>(t));
  p.grad_scale = grad_scale;
  return p;
}

SD_HOST_DEVICE inline void adam_update(float& master, float& m, float& v, float grad,
                                       const AdamParams& p) {
  const float g = grad * p.grad_scale;
  m = p.b1 * m + (1 - p.b1) * g;
  v = p.b2 * v + (1 - p.b2) * g * g;
  master -= p.lr * (m / p.c1) / (sqrtf(v / p.c2) + p.eps);
}

}  // namespace shakedown::train
