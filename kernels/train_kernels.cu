// Elementwise and row-wise kernels of the device training step; the contracts are in
// train_kernels.hpp, the host reference is train/step.cpp.
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <string>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "fp8/scale_math.hpp"
#include "kernels/launch.cuh"
#include "kernels/stream_scratch.cuh"
#include "kernels/train_kernels.hpp"
#include "train/batch_fill.hpp"
#include "train/step_math.hpp"

namespace shakedown::kernels {

namespace {

constexpr unsigned kTile = 32;  // transpose tile (kTile x kTile, kTile x 8 threads)
static_assert(kMaxTransposeRows == 65535LL * kTile, "kMaxTransposeRows: 32-row tiles");

void check_shape(std::int64_t count, const char* what) {
  if (count < 0) throw InternalError(std::string(what) + ": negative element count");
}

void check_launch() {
  SD_CUDA_CHECK(cudaGetLastError());
}

__device__ inline float widen(std::uint16_t bits) {
  return __uint_as_float(static_cast<unsigned>(bits) << 16);
}

__global__ void fill_kernel(float* v, std::uint64_t n, std::uint64_t mixed, float a) {
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    v[i] = train::uniform_at(mixed, i, a);
  }
}

// One block per row; the sum of squares in double, as the host's.
__global__ void rms_norm_kernel(const float* x, std::int64_t cols, float* y) {
  __shared__ double partial[kBlock];
  const float* row = x + static_cast<std::int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<std::int64_t>(blockIdx.x) * cols;
  double sum = 0;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    sum += static_cast<double>(row[c] * row[c]);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const auto inv = static_cast<float>(1.0 / sqrt(partial[0] / static_cast<double>(cols) + 1e-6));
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] * inv;
}

__global__ void widen_kernel(const std::uint16_t* in, std::uint64_t n, float* out) {
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) out[i] = widen(in[i]);
}

__global__ void add_kernel(float* x, const float* y, std::uint64_t n) {
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) x[i] += y[i];
}

template <class In>
__device__ inline float as_float(In v);
template <>
__device__ inline float as_float<float>(float v) {
  return v;
}
template <>
__device__ inline float as_float<std::uint16_t>(std::uint16_t v) {
  return widen(v);
}

// Tiled through shared memory so both the reads and the writes are coalesced.
template <class In>
__global__ void transpose_kernel(const In* in, std::int64_t rows, std::int64_t cols, float* out) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  for (unsigned j = threadIdx.y; j < kTile; j += blockDim.y) {
    const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = as_float(in[r * cols + c]);
  }
  __syncthreads();
  for (unsigned j = threadIdx.y; j < kTile; j += blockDim.y) {
    const std::int64_t c = c0 + j, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][j];
  }
}

template <class In>
void transpose(const In* in, std::int64_t rows, std::int64_t cols, float* out, void* stream) {
  check_shape(rows, "launch_transpose");
  check_shape(cols, "launch_transpose");
  if (rows == 0 || cols == 0) return;
  const std::int64_t by = (rows + kTile - 1) / kTile;
  if (rows > kMaxTransposeRows) throw InternalError("launch_transpose: too many rows");
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>(by));
  transpose_kernel<In><<<grid, dim3(kTile, 8), 0, as_stream(stream)>>>(in, rows, cols, out);
  check_launch();
}

__global__ void activation_kernel(const std::uint16_t* h, std::uint64_t rows, std::uint64_t width,
                                  std::uint64_t f, bool swiglu, float* act) {
  const std::uint64_t n = rows * f;
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    const std::uint64_t r = i / f, k = i % f;
    const float g = widen(h[r * width + k]);
    const float a = train::gelu_sigmoid(g);
    act[i] = swiglu ? a * widen(h[r * width + f + k]) : a;
  }
}

__global__ void swiglu_grad_kernel(const float* dy, std::uint64_t rows, std::uint64_t f,
                                   float* wide) {
  const std::uint64_t n = rows * f;
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    const std::uint64_t r = i / f, k = i % f;
    wide[r * 2 * f + k] = dy[i];
    wide[r * 2 * f + f + k] = dy[i];
  }
}

__global__ void adam_kernel(float* master, float* m, float* v, const float* grad, std::uint64_t n,
                            train::AdamParams p) {
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    train::adam_update(master[i], m[i], v[i], grad[i], p);
  }
}

__global__ void current_scale_kernel(const float* amax, float max_finite, float epsilon,
                                     float* scale) {
  *scale = fp8::current_scale_value(*amax, max_finite, epsilon);
}

__global__ void count_zeros_kernel(const float* v, std::uint64_t n, unsigned long long* count) {
  unsigned long long mine = 0;
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) mine += v[i] == 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_xor_sync(0xFFFFFFFFu, mine, offset);
  if (threadIdx.x % 32 == 0 && mine != 0) atomicAdd(count, mine);
}

// max |v| as bits: for non-negative floats the unsigned order of the bits is the numeric order.
__global__ void max_abs_bits_kernel(const float* v, std::uint64_t n, unsigned long long* bits) {
  unsigned best = 0;
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    best = max(best, __float_as_uint(v[i]) & 0x7FFFFFFFu);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, offset));
  }
  if (threadIdx.x % 32 == 0) atomicMax(bits, static_cast<unsigned long long>(best));
}

// The lowest index holding that |v|, kept complemented so that a max (from 0) finds it.
__global__ void first_at_kernel(const float* v, std::uint64_t n, const unsigned long long* bits,
                                unsigned long long* not_index) {
  const unsigned want = static_cast<unsigned>(*bits);
  for (std::uint64_t i = thread_index(); i < n; i += thread_stride()) {
    if ((__float_as_uint(v[i]) & 0x7FFFFFFFu) == want) {
      atomicMax(not_index, ~static_cast<unsigned long long>(i));
      return;  // this thread's later indices are larger
    }
  }
}

__global__ void flip_at_kernel(float* v, const unsigned long long* not_index, int bit) {
  const unsigned long long i = ~*not_index;
  v[i] = __uint_as_float(__float_as_uint(v[i]) ^ (1u << bit));
}

}  // namespace

void launch_fill_uniform(float* v, std::int64_t count, std::uint64_t key, float a, void* stream) {
  check_shape(count, "launch_fill_uniform");
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  fill_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(v, n, train::mix(key), a);
  check_launch();
}

void launch_rms_norm(const float* x, std::int64_t rows, std::int64_t cols, float* y, void* stream) {
  check_shape(rows, "launch_rms_norm");
  check_shape(cols, "launch_rms_norm");
  if (rows == 0 || cols == 0) return;
  if (rows > 0x7FFFFFFF) throw InternalError("launch_rms_norm: more than 2^31 - 1 rows");
  rms_norm_kernel<<<static_cast<unsigned>(rows), kBlock, 0, as_stream(stream)>>>(x, cols, y);
  check_launch();
}

void launch_widen_bf16(const std::uint16_t* in, std::int64_t count, float* out, void* stream) {
  check_shape(count, "launch_widen_bf16");
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  widen_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(in, n, out);
  check_launch();
}

void launch_add(float* x, const float* y, std::int64_t count, void* stream) {
  check_shape(count, "launch_add");
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  add_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(x, y, n);
  check_launch();
}

void launch_transpose(const float* in, std::int64_t rows, std::int64_t cols, float* out,
                      void* stream) {
  transpose(in, rows, cols, out, stream);
}

void launch_transpose_bf16(const std::uint16_t* in, std::int64_t rows, std::int64_t cols,
                           float* out, void* stream) {
  transpose(in, rows, cols, out, stream);
}

void launch_mlp_activation(const std::uint16_t* h, std::int64_t rows, std::int64_t width,
                           std::int64_t f, bool swiglu, float* act, void* stream) {
  check_shape(rows, "launch_mlp_activation");
  check_shape(f, "launch_mlp_activation");
  if (width != (swiglu ? 2 * f : f)) {
    throw InternalError("launch_mlp_activation: width " + std::to_string(width) + " for f " +
                        std::to_string(f));
  }
  const auto n = static_cast<std::uint64_t>(rows * f);
  if (n == 0) return;
  activation_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(
      h, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(width),
      static_cast<std::uint64_t>(f), swiglu, act);
  check_launch();
}

void launch_widen_swiglu_grad(const float* dy, std::int64_t rows, std::int64_t f, float* wide,
                              void* stream) {
  check_shape(rows, "launch_widen_swiglu_grad");
  check_shape(f, "launch_widen_swiglu_grad");
  const auto n = static_cast<std::uint64_t>(rows * f);
  if (n == 0) return;
  swiglu_grad_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(
      dy, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(f), wide);
  check_launch();
}

void launch_adam(float* master, float* m, float* v, const float* grad, std::int64_t count,
                 const train::AdamParams& p, void* stream) {
  check_shape(count, "launch_adam");
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  adam_kernel<<<grid_for(n), kBlock, 0, as_stream(stream)>>>(master, m, v, grad, n, p);
  check_launch();
}

void launch_current_scale(const float* amax, float max_finite, float epsilon, float* scale,
                          void* stream) {
  current_scale_kernel<<<1, 1, 0, as_stream(stream)>>>(amax, max_finite, epsilon, scale);
  check_launch();
}

std::uint64_t count_zeros(const float* v, std::int64_t count, void* stream) {
  check_shape(count, "count_zeros");
  if (count == 0) return 0;
  const auto n = static_cast<std::uint64_t>(count);
  const cudaStream_t s = as_stream(stream);
  const DeviceCounter zeros(s);
  count_zeros_kernel<<<grid_for(n), kBlock, 0, s>>>(v, n, zeros.get());
  check_launch();
  return zeros.read();
}

void launch_flip_largest(float* v, std::int64_t count, int bit, void* stream) {
  check_shape(count, "launch_flip_largest");
  if (count == 0) return;
  if (bit < 0 || bit >= 32) throw InternalError("launch_flip_largest: bit outside a float");
  const auto n = static_cast<std::uint64_t>(count);
  const cudaStream_t s = as_stream(stream);
  const DeviceCounter bits(s), not_index(s);
  max_abs_bits_kernel<<<grid_for(n), kBlock, 0, s>>>(v, n, bits.get());
  check_launch();
  first_at_kernel<<<grid_for(n), kBlock, 0, s>>>(v, n, bits.get(), not_index.get());
  check_launch();
  flip_at_kernel<<<1, 1, 0, s>>>(v, not_index.get(), bit);
  check_launch();
}

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
