#pragma once
// The device side of the synthetic training step (train/device_step.hpp): the elementwise and
// row-wise parts around its cuBLASLt GEMMs, callable from plain C++ (streams as void*, device
// pointers as plain pointers). Each mirrors the host step (train/step.cpp), which is the
// reference: the same formulas, the same fills (train/batch_fill.hpp). All asynchronous on
// `stream` unless said otherwise; every pointer is device memory of the current device. Throw
// RuntimeFault when a launch fails, InternalError on a shape they cannot take. Only built with
// CUDA (SHAKEDOWN_HAVE_CUDA).
#if SHAKEDOWN_HAVE_CUDA

#include <cstdint>

#include "train/step_math.hpp"

namespace shakedown::kernels {

// v[i] = train::uniform_at(mix(key), i, a): the host's fill_uniform, bit for bit.
void launch_fill_uniform(float* v, std::int64_t count, std::uint64_t key, float a, void* stream);

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + 1e-6) for each of `rows` rows of `cols` fp32.
void launch_rms_norm(const float* x, std::int64_t rows, std::int64_t cols, float* y, void* stream);

// out[i] = in[i] widened from bf16 bits (exact).
void launch_widen_bf16(const std::uint16_t* in, std::int64_t count, float* out, void* stream);

// x[i] += y[i].
void launch_add(float* x, const float* y, std::int64_t count, void* stream);

// The most rows the transposes take: 32-row tiles on the grid's y (65,535 blocks at most).
inline constexpr std::int64_t kMaxTransposeRows = 65535LL * 32;
// out [cols, rows] = in [rows, cols]^T, fp32 (the FP8 transposed copies are quantised from it).
void launch_transpose(const float* in, std::int64_t rows, std::int64_t cols, float* out,
                      void* stream);
// The same from bf16 bits, widened to fp32.
void launch_transpose_bf16(const std::uint16_t* in, std::int64_t rows, std::int64_t cols,
                           float* out, void* stream);

// The MLP's activation from FC1's bf16 output h [rows, width]: act [rows, f] = g sigmoid(1.702 g)
// with g = h[r, k] (GeLU's sigmoid form), times h[r, f + k] under SwiGLU (width = 2 f).
void launch_mlp_activation(const std::uint16_t* h, std::int64_t rows, std::int64_t width,
                           std::int64_t f, bool swiglu, float* act, void* stream);

// SwiGLU's FC1 output gradient: wide [rows, 2 f] with both halves of row r = dy[r, :] ([rows, f]).
void launch_widen_swiglu_grad(const float* dy, std::int64_t rows, std::int64_t f, float* wide,
                              void* stream);

// train::adam_update on each of `count` weights.
void launch_adam(float* master, float* m, float* v, const float* grad, std::int64_t count,
                 const train::AdamParams& p, void* stream);

// *scale = fp8::current_scale_value(*amax, max_finite, epsilon). One thread; the amax never
// leaves the device.
void launch_current_scale(const float* amax, float max_finite, float epsilon, float* scale,
                          void* stream);

// Synchronous: waits for `stream` and returns how many of v[0, count) are exactly 0 (+0 or -0).
std::uint64_t count_zeros(const float* v, std::int64_t count, void* stream);

// Flips bit `bit` (< 32) of the element with the largest |v[i]| (the lowest index on a tie), as
// the host step's injected corruption does.
void launch_flip_largest(float* v, std::int64_t count, int bit, void* stream);

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
