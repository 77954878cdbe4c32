#pragma once
// Device-side FP8 casts and GEMM output checks, callable from plain C++ (no CUDA types here: a
// cudaStream_t travels as void*, device pointers as plain pointers). The host references are
// fp8/fp8.hpp (encode, decode, quantize, dequantize) and gemm/output_hash.hpp; the GPU tests
// (tests/gpu/test_gpu_gemm.cpp) check the kernels against them bit for bit. Only built with CUDA
// (SHAKEDOWN_HAVE_CUDA).
//
// nvcc compiles kernels as C++17 and fp8/fp8.hpp needs C++20 (std::span), so the formats are named
// here by small enums of their own; gemm/cublaslt_matmul.hpp maps fp8::Format and GemmOut onto
// them with checked switches.
#if SHAKEDOWN_HAVE_CUDA

#include <cstdint>
#include <string>

namespace shakedown::kernels {

enum class Fp8Type : std::uint8_t { kE4M3, kE5M2 };
// How a GEMM output D is stored: bf16 bits (std::uint16_t) or fp32.
enum class OutType : std::uint8_t { kBF16, kFP32 };

// ---- casts. All asynchronous on `stream` (a cudaStream_t; nullptr = legacy default stream);
// every pointer is device memory of the current device. Throw RuntimeFault when a launch fails.

// out[i] = fp8::encode(in[i] * *scale, type) for i < count: round to nearest even, saturate to
// the largest finite value (__NV_SATFINITE), NaN stays NaN (code 0x7F, with the sign of a NaN
// input; a NaN made by the multiply itself, inf * 0, gets the positive code). In the same pass:
//   amax      (may be null): max |in[i]|, as fp8::quantize returns it (NaN entries skipped, an
//   infinite one wins: TE's fmaxf).
//             Zeroed on `stream` first, then one atomicMax per block on the float's bits: for
//             non-negative floats the unsigned order of the bits is the numeric order, with +inf
//             above every finite value and NaN above +inf, so the maximum needs no second pass.
//   scale_inv (may be null): 1 / *scale (IEEE division), what the GEMM consumes.
// The scale is read on the device, so a delayed-scaling recipe can keep its state there.
void launch_quantize_fp8(const float* in, std::int64_t count, Fp8Type type, const float* scale,
                         std::uint8_t* out, float* amax, float* scale_inv, void* stream);
// The same from bf16 input (raw bits, widened exactly to float first).
void launch_quantize_fp8_from_bf16(const std::uint16_t* in, std::int64_t count, Fp8Type type,
                                   const float* scale, std::uint8_t* out, float* amax,
                                   float* scale_inv, void* stream);

// out[i] = fp8::decode(in[i], type) * *scale_inv. NaN codes give NaN, E5M2 infinities +-inf.
void launch_dequantize_fp8(const std::uint8_t* in, std::int64_t count, Fp8Type type,
                           const float* scale_inv, float* out, void* stream);

// ---- GEMM output D, `count` elements stored as `type`.

// gemm_hash: the sum modulo 2^64 of element_term(i, stored bits of d[i]). Each thread sums its
// elements, the block sums its threads, and one 64-bit atomicAdd per block adds the block's sum:
// integer addition modulo 2^64 is associative and commutative, so the value is independent of
// the launch shape and of the order the blocks finish in, and equals the host's sum exactly.
// Synchronous: waits for `stream` (so for the GEMM enqueued before it) and returns the hash.
// Uses 8 bytes of stream-ordered device scratch.
std::uint64_t output_hash(const void* d, std::int64_t count, OutType type, void* stream);

// *amax = max |d[i]| (NaN when any element is NaN), as the CPU engine's result() computes it.
// Zeroed on `stream` first; same one-pass atomicMax scheme as the quantize amax. Asynchronous.
void launch_output_amax(const void* d, std::int64_t count, OutType type, float* amax, void* stream);

// Flips bit `bit` (0 = least significant; < 16 for bf16, < 32 for fp32) of element `index` of d,
// in place (the --inject sdc fault). Throws InternalError when index or bit lies outside D.
// Asynchronous.
void launch_flip_output_bit(void* d, std::int64_t count, OutType type, std::int64_t index, int bit,
                            void* stream);

// "" when these kernels can run on the current device; else CUDA's reason (e.g. "no kernel image
// is available for execution on the device": the build's CMAKE_CUDA_ARCHITECTURES lack it).
std::string kernel_image_problem();

}  // namespace shakedown::kernels

#endif  // SHAKEDOWN_HAVE_CUDA
