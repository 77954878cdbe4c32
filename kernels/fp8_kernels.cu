// FP8 quantize (with amax) / dequantize kernels and the GEMM output hash, amax and bit flip. The
// host references are fp8/fp8.cpp and gemm/output_hash.hpp; see fp8_kernels.hpp for the contract
// of each function and tests/gpu/test_gpu_gemm.cpp for the bit-for-bit checks.
#if SHAKEDOWN_HAVE_CUDA

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "gemm/output_hash.hpp"
#include "kernels/fp8_kernels.hpp"
#include "kernels/launch.cuh"
#include "kernels/stream_scratch.cuh"

namespace shakedown::kernels {

namespace {

bool aligned(const void* p, std::uintptr_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// ---- block reductions (blockDim.x == kBlock) ----

__device__ unsigned block_max(unsigned v) {
  __shared__ unsigned warp_max[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) {
    v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  }
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < kWarps; ++w) v = max(v, warp_max[w]);
  }
  return v;  // meaningful in thread 0 only
}

__device__ unsigned long long block_sum(unsigned long long v) {
  __shared__ unsigned long long warp_sum[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  }
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < kWarps; ++w) v += warp_sum[w];
  }
  return v;  // meaningful in thread 0 only
}

// |x| as bits: for x >= 0 the unsigned order of the bits is the float order, +inf (0x7F800000)
// above every finite value and every NaN above +inf, so an unsigned max over these is max |x|
// with NaN winning, as fp8::amax (the GEMM output check) defines it.
__device__ unsigned abs_bits(float x) {
  return __float_as_uint(x) & 0x7FFFFFFFu;
}

// The same for a scaling amax, as fp8::quantize and TE's kernels (fmaxf from 0) take it: a NaN
// element counts as 0, an infinite one wins.
__device__ unsigned amax_bits(float x) {
  const unsigned bits = abs_bits(x);
  return bits > 0x7F800000u ? 0u : bits;
}

// Folds a block's maximum into *amax (zeroed before the launch).
__device__ void publish_amax(unsigned local, float* amax) {
  const unsigned block = block_max(local);
  if (threadIdx.x == 0 && block != 0) atomicMax(reinterpret_cast<unsigned*>(amax), block);
}

// ---- element conversions ----

__device__ float widen(float x) {
  return x;
}
__device__ float widen(std::uint16_t bf16) {
  return __uint_as_float(static_cast<unsigned>(bf16) << 16);
}

// fp8::encode(x * scale): the hardware conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+)
// rounds to nearest even and saturates, including +-inf to +-max finite. Only NaN is handled
// here: the GPU's multiply returns a canonical NaN without the input's sign, while the host keeps
// it, and the code for NaN is 0x7F in both formats (fp8::FormatInfo::nan_code).
template <__nv_fp8_interpretation_t F>
__device__ std::uint8_t encode_scaled(float x, float scale) {
  const float y = __fmul_rn(x, scale);
  if (isnan(y)) return static_cast<std::uint8_t>((isnan(x) && signbit(x)) ? 0xFFu : 0x7Fu);
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(y, __NV_SATFINITE, F));
}

template <__nv_fp8_interpretation_t F>
__device__ float decode(std::uint8_t code) {
  // fp8 -> half is exact for both formats (E4M3's range and precision fit in half; E5M2 is
  // half's top byte), and half -> float is exact.
  const __half_raw h = __nv_cvt_fp8_to_halfraw(code, F);
  return __half2float(__half(h));
}

// ---- quantize ----

// Four elements per thread and iteration, loaded as one 16-byte (float) or 8-byte (bf16) vector
// and stored as one 4-byte word. Pointers must be aligned for that (checked by the launcher);
// the last count % 4 elements go through the scalar kernel.
template <class In>
struct Vec4;
template <>
struct Vec4<float> {
  using Type = float4;
};
template <>
struct Vec4<std::uint16_t> {
  using Type = ushort4;
};

template <__nv_fp8_interpretation_t F, class In>
__global__ void quantize_vec4_kernel(const In* in, std::uint64_t groups, const float* scale_ptr,
                                     std::uint8_t* out, float* amax, float* scale_inv) {
  const float scale = *scale_ptr;
  if (scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *scale_inv = 1.0f / scale;
  const auto* in4 = reinterpret_cast<const typename Vec4<In>::Type*>(in);
  auto* out4 = reinterpret_cast<uchar4*>(out);
  unsigned local = 0;
  for (std::uint64_t g = thread_index(); g < groups; g += thread_stride()) {
    const auto v = in4[g];
    const float x0 = widen(v.x);
    const float x1 = widen(v.y);
    const float x2 = widen(v.z);
    const float x3 = widen(v.w);
    out4[g] = make_uchar4(encode_scaled<F>(x0, scale), encode_scaled<F>(x1, scale),
                          encode_scaled<F>(x2, scale), encode_scaled<F>(x3, scale));
    local = max(max(local, max(amax_bits(x0), amax_bits(x1))), max(amax_bits(x2), amax_bits(x3)));
  }
  if (amax != nullptr) publish_amax(local, amax);
}

template <__nv_fp8_interpretation_t F, class In>
__global__ void quantize_kernel(const In* in, std::uint64_t count, const float* scale_ptr,
                                std::uint8_t* out, float* amax, float* scale_inv) {
  const float scale = *scale_ptr;
  if (scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *scale_inv = 1.0f / scale;
  unsigned local = 0;
  for (std::uint64_t i = thread_index(); i < count; i += thread_stride()) {
    const float x = widen(in[i]);
    out[i] = encode_scaled<F>(x, scale);
    local = max(local, amax_bits(x));
  }
  if (amax != nullptr) publish_amax(local, amax);
}

template <__nv_fp8_interpretation_t F, class In>
void quantize_as(const In* in, std::uint64_t count, const float* scale, std::uint8_t* out,
                 float* amax, float* scale_inv, cudaStream_t s) {
  std::uint64_t done = 0;
  if (aligned(in, 4 * sizeof(In)) && aligned(out, 4)) {
    const std::uint64_t groups = count / 4;
    if (groups != 0) {
      quantize_vec4_kernel<F, In>
          <<<grid_for(groups), kBlock, 0, s>>>(in, groups, scale, out, amax, scale_inv);
      SD_CUDA_CHECK(cudaGetLastError());
      scale_inv = nullptr;  // written once is enough
      done = groups * 4;
    }
  }
  if (done < count) {
    quantize_kernel<F, In><<<grid_for(count - done), kBlock, 0, s>>>(in + done, count - done, scale,
                                                                     out + done, amax, scale_inv);
    SD_CUDA_CHECK(cudaGetLastError());
  }
}

template <class In>
void quantize(const In* in, std::int64_t count, Fp8Type type, const float* scale, std::uint8_t* out,
              float* amax, float* scale_inv, void* stream) {
  if (count < 0) throw InternalError("quantize_fp8: negative count " + std::to_string(count));
  const cudaStream_t s = as_stream(stream);
  if (amax != nullptr) SD_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), s));
  if (count == 0) {
    if (scale_inv == nullptr) return;
    // Nothing to cast, but scale_inv is still part of the result.
    quantize_kernel<__NV_E4M3, In><<<1, kBlock, 0, s>>>(in, 0, scale, out, nullptr, scale_inv);
    SD_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const auto n = static_cast<std::uint64_t>(count);
  switch (type) {
    case Fp8Type::kE4M3:
      return quantize_as<__NV_E4M3>(in, n, scale, out, amax, scale_inv, s);
    case Fp8Type::kE5M2:
      return quantize_as<__NV_E5M2>(in, n, scale, out, amax, scale_inv, s);
  }
  throw InternalError("quantize_fp8: unknown FP8 type " + std::to_string(static_cast<int>(type)));
}

// ---- dequantize ----

template <__nv_fp8_interpretation_t F>
__global__ void dequantize_kernel(const std::uint8_t* in, std::uint64_t count,
                                  const float* scale_inv_ptr, float* out) {
  const float scale_inv = *scale_inv_ptr;
  for (std::uint64_t i = thread_index(); i < count; i += thread_stride()) {
    out[i] = __fmul_rn(decode<F>(in[i]), scale_inv);
  }
}

// ---- output hash, amax, flip ----

template <OutType T>
struct Stored;
template <>
struct Stored<OutType::kBF16> {
  using Type = std::uint16_t;
  __device__ static std::uint32_t bits(Type v) { return v; }
  __device__ static float value(Type v) { return widen(v); }
};
template <>
struct Stored<OutType::kFP32> {
  using Type = float;
  __device__ static std::uint32_t bits(Type v) { return __float_as_uint(v); }
  __device__ static float value(Type v) { return v; }
};

template <OutType T>
__global__ void hash_kernel(const void* d, std::uint64_t count, unsigned long long* sum) {
  const auto* values = static_cast<const typename Stored<T>::Type*>(d);
  unsigned long long local = 0;
  for (std::uint64_t i = thread_index(); i < count; i += thread_stride()) {
    local += gemm_hash::element_term(i, Stored<T>::bits(values[i]));
  }
  const unsigned long long block = block_sum(local);
  if (threadIdx.x == 0) atomicAdd(sum, block);
}

template <OutType T>
__global__ void output_amax_kernel(const void* d, std::uint64_t count, float* amax) {
  const auto* values = static_cast<const typename Stored<T>::Type*>(d);
  unsigned local = 0;
  for (std::uint64_t i = thread_index(); i < count; i += thread_stride()) {
    local = max(local, abs_bits(Stored<T>::value(values[i])));
  }
  publish_amax(local, amax);
}

__global__ void flip_bit_kernel(void* d, OutType type, std::uint64_t index, unsigned bit) {
  if (type == OutType::kBF16) {
    auto* p = static_cast<std::uint16_t*>(d) + index;
    *p = static_cast<std::uint16_t>(*p ^ (1u << bit));
  } else {
    auto* p = static_cast<std::uint32_t*>(d) + index;
    *p ^= 1u << bit;
  }
}

int bits_of(OutType type) {
  switch (type) {
    case OutType::kBF16:
      return 16;
    case OutType::kFP32:
      return 32;
  }
  throw InternalError("GEMM output kernels: unknown output type " +
                      std::to_string(static_cast<int>(type)));
}

void check_count(std::int64_t count, const char* what) {
  if (count < 0)
    throw InternalError(std::string(what) + ": negative count " + std::to_string(count));
}

}  // namespace

void launch_quantize_fp8(const float* in, std::int64_t count, Fp8Type type, const float* scale,
                         std::uint8_t* out, float* amax, float* scale_inv, void* stream) {
  quantize(in, count, type, scale, out, amax, scale_inv, stream);
}

void launch_quantize_fp8_from_bf16(const std::uint16_t* in, std::int64_t count, Fp8Type type,
                                   const float* scale, std::uint8_t* out, float* amax,
                                   float* scale_inv, void* stream) {
  quantize(in, count, type, scale, out, amax, scale_inv, stream);
}

void launch_dequantize_fp8(const std::uint8_t* in, std::int64_t count, Fp8Type type,
                           const float* scale_inv, float* out, void* stream) {
  check_count(count, "dequantize_fp8");
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  const cudaStream_t s = as_stream(stream);
  switch (type) {
    case Fp8Type::kE4M3:
      dequantize_kernel<__NV_E4M3><<<grid_for(n), kBlock, 0, s>>>(in, n, scale_inv, out);
      break;
    case Fp8Type::kE5M2:
      dequantize_kernel<__NV_E5M2><<<grid_for(n), kBlock, 0, s>>>(in, n, scale_inv, out);
      break;
    default:
      throw InternalError("dequantize_fp8: unknown FP8 type " +
                          std::to_string(static_cast<int>(type)));
  }
  SD_CUDA_CHECK(cudaGetLastError());
}

std::uint64_t output_hash(const void* d, std::int64_t count, OutType type, void* stream) {
  check_count(count, "output_hash");
  (void)bits_of(type);  // rejects an unknown type before anything is enqueued
  if (count == 0) return 0;
  const auto n = static_cast<std::uint64_t>(count);
  const cudaStream_t s = as_stream(stream);
  const DeviceCounter sum(s);
  if (type == OutType::kBF16) {
    hash_kernel<OutType::kBF16><<<grid_for(n), kBlock, 0, s>>>(d, n, sum.get());
  } else {
    hash_kernel<OutType::kFP32><<<grid_for(n), kBlock, 0, s>>>(d, n, sum.get());
  }
  SD_CUDA_CHECK(cudaGetLastError());
  return static_cast<std::uint64_t>(sum.read());
}

void launch_output_amax(const void* d, std::int64_t count, OutType type, float* amax,
                        void* stream) {
  check_count(count, "output_amax");
  (void)bits_of(type);
  const cudaStream_t s = as_stream(stream);
  SD_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), s));
  if (count == 0) return;
  const auto n = static_cast<std::uint64_t>(count);
  if (type == OutType::kBF16) {
    output_amax_kernel<OutType::kBF16><<<grid_for(n), kBlock, 0, s>>>(d, n, amax);
  } else {
    output_amax_kernel<OutType::kFP32><<<grid_for(n), kBlock, 0, s>>>(d, n, amax);
  }
  SD_CUDA_CHECK(cudaGetLastError());
}

void launch_flip_output_bit(void* d, std::int64_t count, OutType type, std::int64_t index, int bit,
                            void* stream) {
  if (index < 0 || index >= count || bit < 0 || bit >= bits_of(type)) {
    throw InternalError("flip_output_bit: element " + std::to_string(index) + " bit " +
                        std::to_string(bit) + " is outside D (" + std::to_string(count) +
                        " elements of " + std::to_string(bits_of(type)) + " bits)");
  }
  flip_bit_kernel<<<1, 1, 0, as_stream(stream)>>>(d, type, static_cast<std::uint64_t>(index),
                                                  static_cast<unsigned>(bit));
  SD_CUDA_CHECK(cudaGetLastError());
}

std::string kernel_image_problem() {
  cudaFuncAttributes attributes{};
  const cudaError_t rc = cudaFuncGetAttributes(&attributes, flip_bit_kernel);
  if (rc == cudaSuccess) return "";
  (void)cudaGetLastError();  // not sticky: clear it for the next call
  return cudaGetErrorString(rc);
}

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
