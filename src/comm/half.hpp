#pragma once
// Small float formats (bfloat16, float16, fp8 E4M3 and E5M2) as raw bits <-> double, by plain
// arithmetic: no CUDA half types and no type punning, so host code and device kernels run the same
// functions. Round to nearest even; -0 is stored as +0. Overflow gives infinity (E4M3, which has
// none, gives NaN: these are checking codecs, not the saturating casts of fp8/).
#include <cstdint>

#include "core/host_device.hpp"

namespace shakedown::small_float {

// 2^k, exact for |k| < 1023 (successive squaring of exact powers of two).
SD_HOST_DEVICE constexpr double pow2(int k) {
  double base = k < 0 ? 0.5 : 2.0;
  unsigned n = k < 0 ? static_cast<unsigned>(-k) : static_cast<unsigned>(k);
  double result = 1.0;
  while (n != 0) {
    if ((n & 1u) != 0) result *= base;
    n >>= 1;
    if (n != 0) base *= base;
  }
  return result;
}

// Not constant expressions; reached only for the special encodings.
SD_HOST_DEVICE constexpr double infinity() {
  const double big = 1e300;
  return big * big;
}
SD_HOST_DEVICE constexpr double quiet_nan() {
  const double inf = infinity();
  return inf - inf;
}

// A format with M mantissa bits and E exponent bits (bias 2^(E-1) - 1). Ieee: the all-ones
// exponent holds infinities and NaNs. Otherwise (E4M3 "fn"): no infinity, S.1111.111 is NaN.
template <int M, int E, bool Ieee>
struct Format {
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr int kEmin = 1 - kBias;  // exponent of the smallest normal
  static constexpr std::uint32_t kExpAllOnes = (1u << E) - 1u;
  static constexpr std::uint32_t kMantAllOnes = (1u << M) - 1u;
  static constexpr std::uint32_t kSign = 1u << (M + E);
  static constexpr std::uint32_t kNaN = (kExpAllOnes << M) | kMantAllOnes;
  static constexpr std::uint32_t kOverflow = Ieee ? (kExpAllOnes << M) : kNaN;
  // The largest finite value is (2^M + kTopMant) * 2^(kTopExp - M).
  static constexpr int kTopExp =
      (Ieee ? static_cast<int>(kExpAllOnes) - 1 : static_cast<int>(kExpAllOnes)) - kBias;
  static constexpr std::uint32_t kTopMant = Ieee ? kMantAllOnes : kMantAllOnes - 1u;
};

// Position of the highest set bit of u > 0, without loops or intrinsics (selects, on a GPU too).
SD_HOST_DEVICE constexpr int highest_bit(std::uint32_t u) {
  int e = 0;
  int s = u >= (1u << 16) ? 16 : 0;
  u >>= s;
  e += s;
  s = u >= (1u << 8) ? 8 : 0;
  u >>= s;
  e += s;
  s = u >= (1u << 4) ? 4 : 0;
  u >>= s;
  e += s;
  s = u >= (1u << 2) ? 2 : 0;
  u >>= s;
  e += s;
  return e + (u >= 2u ? 1 : 0);
}

// Integer fast path (every pattern value): magnitude u > 0, sign bits already placed.
template <int M, int E, bool Ieee>
SD_HOST_DEVICE constexpr std::uint32_t encode_integer(std::uint32_t sign, std::uint32_t u) {
  using F = Format<M, E, Ieee>;
  int e = highest_bit(u);
  std::uint32_t q = 0;  // significand with the leading one, M + 1 bits
  if (e <= M) {
    q = u << (M - e);
  } else {
    const int shift = e - M;
    q = u >> shift;
    const std::uint32_t rest = u & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
    if (q == (2u << M)) {
      q = 1u << M;
      ++e;
    }
  }
  const std::uint32_t mant = q - (1u << M);
  if (e > F::kTopExp || (e == F::kTopExp && mant > F::kTopMant)) return sign | F::kOverflow;
  return sign | (static_cast<std::uint32_t>(e + F::kBias) << M) | mant;
}

template <int M, int E, bool Ieee>
SD_HOST_DEVICE constexpr std::uint32_t encode(double v) {
  using F = Format<M, E, Ieee>;
  if (v != v) return F::kNaN;
  const std::uint32_t sign = v < 0 ? F::kSign : 0u;
  const double a = v < 0 ? -v : v;
  if (a == 0) return 0u;
  if (a < 2147483648.0) {
    const std::uint32_t u = static_cast<std::uint32_t>(a);
    if (static_cast<double>(u) == a) return encode_integer<M, E, Ieee>(sign, u);
  }
  // General path. e = floor(log2 a), but no lower than kEmin (subnormals share its quantum) and
  // no higher than kTopExp + 1 (already an overflow): at most ~150 steps.
  int e = 0;
  double p = 1.0;  // 2^e
  if (a >= 2.0) {
    while (e <= F::kTopExp && a >= 2.0 * p) {
      p *= 2.0;
      ++e;
    }
    if (e > F::kTopExp) return sign | F::kOverflow;
  } else {
    while (e > F::kEmin && p > a) {
      p *= 0.5;
      --e;
    }
  }
  // a in units of the quantum 2^(e-M): [2^M, 2^(M+1)) normal, [0, 2^M) subnormal.
  const double q = a * pow2(M - e);
  std::uint32_t fl = static_cast<std::uint32_t>(q);
  const double frac = q - static_cast<double>(fl);
  if (frac > 0.5 || (frac == 0.5 && (fl & 1u) != 0)) ++fl;
  if (fl == (2u << M)) {  // rounded up into the next binade
    fl = 1u << M;
    ++e;
  }
  if (fl == 0) return 0u;                // underflow (to +0, as -0 is stored)
  if (fl < (1u << M)) return sign | fl;  // subnormal (e == kEmin)
  const std::uint32_t mant = fl - (1u << M);
  if (e > F::kTopExp || (e == F::kTopExp && mant > F::kTopMant)) return sign | F::kOverflow;
  return sign | (static_cast<std::uint32_t>(e + F::kBias) << M) | mant;
}

// sig * 2^k, exact; shifts and one division by a power of two in the common range.
SD_HOST_DEVICE constexpr double scale(std::uint32_t sig, int k) {
  if (k >= 0 && k < 32) return static_cast<double>(static_cast<std::uint64_t>(sig) << k);
  if (k < 0 && k > -63) {
    return static_cast<double>(sig) / static_cast<double>(std::uint64_t{1} << -k);
  }
  return static_cast<double>(sig) * pow2(k);
}

template <int M, int E, bool Ieee>
SD_HOST_DEVICE constexpr double decode(std::uint32_t bits) {
  using F = Format<M, E, Ieee>;
  const bool negative = (bits & F::kSign) != 0;
  const std::uint32_t exp = (bits >> M) & F::kExpAllOnes;
  const std::uint32_t mant = bits & F::kMantAllOnes;
  if (Ieee && exp == F::kExpAllOnes) {
    if (mant != 0) return quiet_nan();
    return negative ? -infinity() : infinity();
  }
  if (!Ieee && exp == F::kExpAllOnes && mant == F::kMantAllOnes) return quiet_nan();
  const double mag = exp == 0 ? scale(mant, F::kEmin - M)
                              : scale((1u << M) + mant, static_cast<int>(exp) - F::kBias - M);
  return negative ? -mag : mag;
}

SD_HOST_DEVICE constexpr std::uint16_t bf16_from_double(double v) {
  return static_cast<std::uint16_t>(encode<7, 8, true>(v));
}
SD_HOST_DEVICE constexpr double bf16_to_double(std::uint16_t bits) {
  return decode<7, 8, true>(bits);
}
SD_HOST_DEVICE constexpr std::uint16_t fp16_from_double(double v) {
  return static_cast<std::uint16_t>(encode<10, 5, true>(v));
}
SD_HOST_DEVICE constexpr double fp16_to_double(std::uint16_t bits) {
  return decode<10, 5, true>(bits);
}
SD_HOST_DEVICE constexpr std::uint8_t e4m3_from_double(double v) {
  return static_cast<std::uint8_t>(encode<3, 4, false>(v));
}
SD_HOST_DEVICE constexpr double e4m3_to_double(std::uint8_t bits) {
  return decode<3, 4, false>(bits);
}
SD_HOST_DEVICE constexpr std::uint8_t e5m2_from_double(double v) {
  return static_cast<std::uint8_t>(encode<2, 5, true>(v));
}
SD_HOST_DEVICE constexpr double e5m2_to_double(std::uint8_t bits) {
  return decode<2, 5, true>(bits);
}

}  // namespace shakedown::small_float
