#pragma once
// How many significant bits the file keeps of a float32 sample: rounding to nearest and zeroing
// the rest costs a relative error of at most 2^-bits and lets shuffle + deflate store the zeroed
// low bits almost for free.
#include <bit>
#include <cmath>
#include <cstdint>

namespace shakedown {

inline float round_significant(double x, int bits) {
  const auto f = static_cast<float>(x);
  if (!std::isfinite(f) || bits >= 24) return f;
  const int drop = 24 - bits;  // float32 has a 24-bit significand
  auto u = std::bit_cast<std::uint32_t>(f);
  u += 1u << (drop - 1);
  u &= ~((1u << drop) - 1u);
  return std::bit_cast<float>(u);
}

}  // namespace shakedown
