#pragma once
// bfloat16 as raw bits: the GEMM engines round their fp32 results with this, so the CPU reference
// and the GPU (cuBLASLt writes bf16 rounded to nearest even) store the same bits.
#include <bit>
#include <cstdint>

namespace shakedown::fp8 {

// Round to nearest even; values past the largest bf16 become +-inf as IEEE rounding does. NaN
// becomes the quiet NaN 0x7FC0 with its sign kept: truncating could otherwise drop every payload
// bit and turn a NaN into infinity.
constexpr std::uint16_t bf16_bits(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | 0x7FC0u);
  }
  // Adding 0x7FFF rounds the dropped half up only past the tie; the kept lsb breaks the tie to
  // even. A carry out of the mantissa bumps the exponent, which is the right next value (up to
  // infinity).
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

// Exact: every bfloat16 is a float.
constexpr float bf16_value(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace shakedown::fp8
