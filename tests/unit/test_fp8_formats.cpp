// FP8 encode/decode checked three ways: hand-derived values at every kind of boundary, every one of
// the 256 codes, and a brute-force reference (nearest finite code by exact distance) on millions of
// random floats and on every float within a few ulps of every rounding boundary.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fp8/bf16.hpp"
#include "fp8/fp8.hpp"
#include "fp8/tensor.hpp"
#include "fp8_support.hpp"

namespace shakedown::fp8 {
namespace {

using testing_support::kInf;
using testing_support::kNaN;

std::string hex(unsigned code) {
  constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[(code >> 4) & 15u] + kDigits[code & 15u];
}

// ---- independent reference ----

// The format's value grid written from the OCP table, not from the library: the magnitude of every
// non-negative finite code in code order (which is also value order).
struct Grid {
  int mantissa_bits;
  int bias;
  unsigned max_code;
  std::vector<double> magnitudes;  // index = code, 0 .. max_code
};

Grid make_grid(Format format) {
  Grid g{};
  if (format == Format::kE4M3) {
    g = Grid{3, 7, 0x7E, {}};
  } else {
    g = Grid{2, 15, 0x7B, {}};
  }
  const double one_ulp_sub = std::pow(2.0, 1 - g.bias - g.mantissa_bits);
  for (unsigned c = 0; c <= g.max_code; ++c) {
    const unsigned e = c >> g.mantissa_bits;
    const unsigned m = c & ((1u << g.mantissa_bits) - 1u);
    const double v = e == 0 ? m * one_ulp_sub
                            : std::pow(2.0, static_cast<int>(e) - g.bias) *
                                  (1.0 + m / std::pow(2.0, g.mantissa_bits));
    g.magnitudes.push_back(v);
  }
  return g;
}

const Grid& grid(Format format) {
  static const Grid kE4M3 = make_grid(Format::kE4M3);
  static const Grid kE5M2 = make_grid(Format::kE5M2);
  return format == Format::kE4M3 ? kE4M3 : kE5M2;
}

// Nearest finite code by distance, ties to the even code (adjacent codes differ in their last
// mantissa bit, and the carry from mantissa into exponent keeps that true across binades), clamped
// to max finite first (satfinite). The clamp also keeps every distance that can decide a tie exact
// in double: |x| <= 2^16 and both |x| (24 bits) and the grid values sit on multiples of 2^-149 no
// further than 2^17 apart, so the two competing distances differ by at least an ulp of float at x,
// far more than the double rounding of either.
std::uint8_t reference_encode(float x, Format format) {
  const Grid& g = grid(format);
  const unsigned sign = std::signbit(x) ? 0x80u : 0u;
  if (std::isnan(x)) return static_cast<std::uint8_t>(sign | 0x7Fu);
  const double a = std::fabs(static_cast<double>(x));
  if (a >= g.magnitudes[g.max_code]) return static_cast<std::uint8_t>(sign | g.max_code);
  unsigned best = 0;
  double best_distance = a;
  for (unsigned c = 1; c <= g.max_code; ++c) {
    const double d = std::fabs(a - g.magnitudes[c]);
    if (d < best_distance || (d == best_distance && (c & 1u) == 0)) {
      best = c;
      best_distance = d;
    }
    // Past x the distances only grow: nothing further can win (speed only).
    if (g.magnitudes[c] - a > best_distance) break;
  }
  return static_cast<std::uint8_t>(sign | best);
}

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint32_t bits_of(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

// ---- info, names, parsing ----

TEST(Fp8Info, MatchesTheOcpTable) {
  const FormatInfo& e4 = info(Format::kE4M3);
  EXPECT_EQ(e4.name, "e4m3");
  EXPECT_EQ(e4.exponent_bits, 4);
  EXPECT_EQ(e4.mantissa_bits, 3);
  EXPECT_EQ(e4.bias, 7);
  EXPECT_EQ(e4.max_finite, 448.0f);
  EXPECT_EQ(e4.min_normal, std::ldexp(1.0f, -6));
  EXPECT_EQ(e4.min_subnormal, std::ldexp(1.0f, -9));
  EXPECT_FALSE(e4.has_infinity);
  EXPECT_EQ(e4.max_finite_code, 0x7E);
  EXPECT_EQ(e4.nan_code, 0x7F);

  const FormatInfo& e5 = info(Format::kE5M2);
  EXPECT_EQ(e5.name, "e5m2");
  EXPECT_EQ(e5.exponent_bits, 5);
  EXPECT_EQ(e5.mantissa_bits, 2);
  EXPECT_EQ(e5.bias, 15);
  EXPECT_EQ(e5.max_finite, 57344.0f);
  EXPECT_EQ(e5.min_normal, std::ldexp(1.0f, -14));
  EXPECT_EQ(e5.min_subnormal, std::ldexp(1.0f, -16));
  EXPECT_TRUE(e5.has_infinity);
  EXPECT_EQ(e5.max_finite_code, 0x7B);
  EXPECT_EQ(e5.nan_code, 0x7F);

  EXPECT_EQ(name(Format::kE4M3), "e4m3");
  EXPECT_EQ(name(Format::kE5M2), "e5m2");
}

TEST(Fp8Parse, AcceptsBothFormatsInAnyCase) {
  EXPECT_EQ(parse_format("e4m3"), Format::kE4M3);
  EXPECT_EQ(parse_format("E4M3"), Format::kE4M3);
  EXPECT_EQ(parse_format("e5m2"), Format::kE5M2);
  EXPECT_EQ(parse_format("E5m2"), Format::kE5M2);
}

TEST(Fp8Parse, RejectsOthersNamingTheChoices) {
  try {
    parse_format("e4m4");
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("e4m4"), std::string::npos) << what;
    EXPECT_NE(what.find("e4m3 or e5m2"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean"), std::string::npos) << what;
  }
  EXPECT_THROW(parse_format(""), UsageError);
  EXPECT_THROW(parse_format("fp8"), UsageError);
  EXPECT_THROW(parse_format(" e4m3"), UsageError);
}

// ---- decode ----

TEST(Fp8Decode, KnownValues) {
  EXPECT_EQ(decode(0x00, Format::kE4M3), 0.0f);
  EXPECT_TRUE(std::signbit(decode(0x80, Format::kE4M3)));
  EXPECT_EQ(decode(0x80, Format::kE4M3), 0.0f);
  EXPECT_EQ(decode(0x01, Format::kE4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(decode(0x07, Format::kE4M3), 7.0f * std::ldexp(1.0f, -9));
  EXPECT_EQ(decode(0x08, Format::kE4M3), std::ldexp(1.0f, -6));
  EXPECT_EQ(decode(0x38, Format::kE4M3), 1.0f);
  EXPECT_EQ(decode(0x39, Format::kE4M3), 1.125f);
  EXPECT_EQ(decode(0x7D, Format::kE4M3), 416.0f);
  EXPECT_EQ(decode(0x7E, Format::kE4M3), 448.0f);
  EXPECT_EQ(decode(0xFE, Format::kE4M3), -448.0f);
  EXPECT_EQ(decode(0x78, Format::kE4M3), 256.0f);  // S.1111.000 is a number in E4M3
  EXPECT_TRUE(std::isnan(decode(0x7F, Format::kE4M3)));
  EXPECT_TRUE(std::isnan(decode(0xFF, Format::kE4M3)));
  EXPECT_TRUE(std::signbit(decode(0xFF, Format::kE4M3)));

  EXPECT_EQ(decode(0x01, Format::kE5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(decode(0x03, Format::kE5M2), 3.0f * std::ldexp(1.0f, -16));
  EXPECT_EQ(decode(0x04, Format::kE5M2), std::ldexp(1.0f, -14));
  EXPECT_EQ(decode(0x3C, Format::kE5M2), 1.0f);
  EXPECT_EQ(decode(0x3D, Format::kE5M2), 1.25f);
  EXPECT_EQ(decode(0x7A, Format::kE5M2), 49152.0f);
  EXPECT_EQ(decode(0x7B, Format::kE5M2), 57344.0f);
  EXPECT_EQ(decode(0x7C, Format::kE5M2), kInf);
  EXPECT_EQ(decode(0xFC, Format::kE5M2), -kInf);
  for (unsigned c : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu}) {
    const float v = decode(static_cast<std::uint8_t>(c), Format::kE5M2);
    EXPECT_TRUE(std::isnan(v)) << hex(c);
    EXPECT_EQ(std::signbit(v), c >= 0x80) << hex(c);
  }
}

TEST(Fp8Decode, TableMatchesReferenceGridForAllCodes) {
  for (Format f : {Format::kE4M3, Format::kE5M2}) {
    const Grid& g = grid(f);
    const std::array<float, 256>& table = decode_table(f);
    EXPECT_EQ(&table, &decode_table(f)) << "built once";
    for (unsigned c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const float v = decode(code, f);
      EXPECT_EQ(bits_of(v), bits_of(table[c])) << name(f) << " " << hex(c);
      const unsigned magnitude_code = c & 0x7Fu;
      if (magnitude_code <= g.max_code) {
        const double expected =
            (c & 0x80u) ? -g.magnitudes[magnitude_code] : g.magnitudes[magnitude_code];
        EXPECT_EQ(static_cast<double>(v), expected) << name(f) << " " << hex(c);
        EXPECT_EQ(std::signbit(v), (c & 0x80u) != 0) << name(f) << " " << hex(c);
      } else if (f == Format::kE5M2 && magnitude_code == 0x7C) {
        EXPECT_TRUE(std::isinf(v)) << hex(c);
      } else {
        EXPECT_TRUE(std::isnan(v)) << name(f) << " " << hex(c);
      }
    }
  }
}

// ---- encode: every code, and hand-derived boundaries ----

TEST(Fp8Encode, EveryCodeRoundTrips) {
  for (Format f : {Format::kE4M3, Format::kE5M2}) {
    const FormatInfo& fi = info(f);
    for (unsigned c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const float v = decode(code, f);
      const unsigned sign = c & 0x80u;
      unsigned expected = c;  // finite codes, -0 (0x80) included, come back unchanged
      if (std::isnan(v)) expected = sign | fi.nan_code;
      if (std::isinf(v)) expected = sign | fi.max_finite_code;  // satfinite
      EXPECT_EQ(encode(v, f), expected) << name(f) << " " << hex(c);
    }
  }
}

struct Case {
  float x;
  unsigned code;
};

void expect_codes(Format f, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(encode(c.x, f), c.code)
        << name(f) << " x=" << c.x << " (bits " << bits_of(c.x) << ")";
    // The negative of every case is the same code with the sign bit.
    EXPECT_EQ(encode(-c.x, f), c.code ^ 0x80u) << name(f) << " x=" << -c.x;
  }
}

float up(float x) {
  return std::nextafter(x, kInf);
}
float down(float x) {
  return std::nextafter(x, 0.0f);
}

TEST(Fp8Encode, E4M3Boundaries) {
  const float sub = std::ldexp(1.0f, -9);  // min subnormal, code 0x01
  expect_codes(
      Format::kE4M3,
      {
          {0.0f, 0x00},
          {std::numeric_limits<float>::denorm_min(), 0x00},
          {FLT_MIN, 0x00},
          // half the min subnormal: tie between 0 (even) and 0x01 -> 0; anything above -> 0x01
          {0.5f * sub, 0x00},
          {down(0.5f * sub), 0x00},
          {up(0.5f * sub), 0x01},
          {sub, 0x01},
          // subnormal ties: 1.5 sub between 0x01 and 0x02 -> 0x02; 2.5 sub -> 0x02; 3.5 sub -> 0x04
          {1.5f * sub, 0x02},
          {down(1.5f * sub), 0x01},
          {2.5f * sub, 0x02},
          {up(2.5f * sub), 0x03},
          {3.5f * sub, 0x04},
          // subnormal/normal boundary: 7 sub (0x07) .. 8 sub = 2^-6 (0x08, min normal); tie -> 0x08
          {7.0f * sub, 0x07},
          {7.5f * sub, 0x08},
          {down(7.5f * sub), 0x07},
          {std::ldexp(1.0f, -6), 0x08},
          // first normal step is the subnormal step: 2^-6 + 2^-9 is 0x09
          {std::ldexp(1.0f, -6) + sub, 0x09},
          // normal range: 1 = 0x38, 1.125 = 0x39, 1.25 = 0x3A
          {1.0f, 0x38},
          {1.0625f, 0x38},  // tie -> even 0x38
          {up(1.0625f), 0x39},
          {1.1875f, 0x3A},  // tie between 0x39 and 0x3A -> 0x3A
          {down(1.1875f), 0x39},
          // binade carry: 1.9375 is the tie between 1.875 (0x3F) and 2 (0x40) -> 0x40
          {1.9375f, 0x40},
          {down(1.9375f), 0x3F},
          // top: 416 = 0x7D, 448 = 0x7E (max finite); tie 432 -> even 0x7E
          {416.0f, 0x7D},
          {432.0f, 0x7E},
          {down(432.0f), 0x7D},
          {448.0f, 0x7E},
          {up(448.0f), 0x7E},
          // 464 is halfway to the nonexistent 480; it and everything past it saturate
          {464.0f, 0x7E},
          {up(464.0f), 0x7E},
          {480.0f, 0x7E},
          {1.0e6f, 0x7E},
          {FLT_MAX, 0x7E},
          {kInf, 0x7E},
          {kNaN, 0x7F},
      });
  EXPECT_EQ(encode(-0.0f, Format::kE4M3), 0x80);
  EXPECT_EQ(encode(-kNaN, Format::kE4M3), 0xFF);
  EXPECT_EQ(encode(-std::numeric_limits<float>::signaling_NaN(), Format::kE4M3), 0xFF);
}

TEST(Fp8Encode, E5M2Boundaries) {
  const float sub = std::ldexp(1.0f, -16);  // min subnormal, code 0x01
  expect_codes(
      Format::kE5M2,
      {
          {0.0f, 0x00},
          {std::numeric_limits<float>::denorm_min(), 0x00},
          {0.5f * sub, 0x00},
          {down(0.5f * sub), 0x00},
          {up(0.5f * sub), 0x01},
          {sub, 0x01},
          {1.5f * sub, 0x02},
          {2.5f * sub, 0x02},
          {up(2.5f * sub), 0x03},
          {3.0f * sub, 0x03},  // largest subnormal
          {3.5f * sub, 0x04},  // tie with the min normal 2^-14 (0x04, even)
          {down(3.5f * sub), 0x03},
          {std::ldexp(1.0f, -14), 0x04},
          {1.0f, 0x3C},
          {1.125f, 0x3C},  // tie between 1 (0x3C) and 1.25 (0x3D)
          {up(1.125f), 0x3D},
          {1.375f, 0x3E},  // tie between 1.25 (0x3D) and 1.5 (0x3E)
          {1.875f, 0x40},  // tie between 1.75 (0x3F) and 2 (0x40): carry into the exponent
          {down(1.875f), 0x3F},
          {49152.0f, 0x7A},
          {53248.0f, 0x7A},  // tie between 0x7A and 0x7B -> 0x7A
          {up(53248.0f), 0x7B},
          {57344.0f, 0x7B},
          {59392.0f, 0x7B},  // halfway to the next step (61440, infinity's slot): saturates
          {up(59392.0f), 0x7B},
          {61440.0f, 0x7B},
          {65536.0f, 0x7B},
          {FLT_MAX, 0x7B},
          {kInf, 0x7B},
          {kNaN, 0x7F},
      });
  EXPECT_EQ(encode(-0.0f, Format::kE5M2), 0x80);
  EXPECT_EQ(encode(-kNaN, Format::kE5M2), 0xFF);
  // A NaN with only a low payload bit is still NaN, not infinity or max finite.
  EXPECT_EQ(encode(from_bits(0x7F800001u), Format::kE5M2), 0x7F);
  EXPECT_EQ(encode(from_bits(0xFF800001u), Format::kE4M3), 0xFF);
}

// ---- encode against the brute-force reference ----

void expect_matches_reference(Format f, float x, int& failures) {
  const unsigned got = encode(x, f);
  const unsigned want = reference_encode(x, f);
  if (got != want) {
    if (++failures <= 10) {
      ADD_FAILURE() << name(f) << " x=" << x << " (bits " << bits_of(x) << "): encode " << hex(got)
                    << ", reference " << hex(want);
    }
  }
}

TEST(Fp8Encode, MatchesReferenceNearEveryBoundary) {
  constexpr int kUlps = 48;
  for (Format f : {Format::kE4M3, Format::kE5M2}) {
    const Grid& g = grid(f);
    // Every code value, every midpoint between neighbours, and the nonexistent step above max
    // finite with its midpoint (the saturation boundary).
    std::vector<double> points = g.magnitudes;
    const double top = g.magnitudes[g.max_code];
    const double step = top - g.magnitudes[g.max_code - 1];
    points.push_back(top + step);
    points.push_back(top + step / 2);
    for (unsigned c = 0; c < g.max_code; ++c) {
      points.push_back((g.magnitudes[c] + g.magnitudes[c + 1]) / 2);
    }
    int failures = 0;
    std::size_t checked = 0;
    for (const double p : points) {
      const auto center = static_cast<float>(p);  // exact: all of these have <= 5 significant bits
      ASSERT_EQ(static_cast<double>(center), p);
      float lo = center;
      for (int i = 0; i < kUlps; ++i) lo = std::nextafter(lo, -kInf);
      float x = lo;
      for (int i = 0; i <= 2 * kUlps; ++i, x = std::nextafter(x, kInf)) {
        expect_matches_reference(f, x, failures);
        expect_matches_reference(f, -x, failures);
        checked += 2;
      }
    }
    EXPECT_EQ(failures, 0) << name(f) << ": " << failures << " of " << checked;
  }
}

TEST(Fp8Encode, MatchesReferenceOnRandomFloats) {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (Format f : {Format::kE4M3, Format::kE5M2}) {
    const FormatInfo& fi = info(f);
    // Exponents from well below the smallest subnormal to above the largest finite value.
    std::uniform_int_distribution<int> exponent(127 + (1 - fi.bias - fi.mantissa_bits) - 4,
                                                127 + (1 << fi.exponent_bits) - fi.bias + 1);
    std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFFu);
    int failures = 0;
    constexpr int kEach = 1'000'000;
    for (int i = 0; i < kEach; ++i) {
      // Any float at all (NaNs, infinities, float subnormals included)...
      expect_matches_reference(f, from_bits(any_bits(rng)), failures);
      // ...and floats in and around the format's range, where the rounding work is.
      const std::uint32_t sign = (any_bits(rng) & 1u) << 31;
      const auto e = static_cast<std::uint32_t>(exponent(rng));
      expect_matches_reference(f, from_bits(sign | (e << 23) | mantissa(rng)), failures);
    }
    EXPECT_EQ(failures, 0) << name(f) << ": " << failures << " of " << 2 * kEach;
  }
}

// ---- bulk casts ----

TEST(Fp8Bulk, QuantizeScalesEncodesAndReturnsUnscaledAmax) {
  const std::vector<float> in{1.0f, -3.0f, 0.25f, 100.0f, -0.0f};
  std::vector<std::uint8_t> out(in.size());
  const float a = quantize(in, 2.0f, Format::kE4M3, out);
  EXPECT_EQ(a, 100.0f);  // of the input, not of the scaled values
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i], encode(in[i] * 2.0f, Format::kE4M3)) << i;
  }
  EXPECT_EQ(out[3], 0x74);  // 200: the tie between 192 (0x74) and 208 (0x75)
  EXPECT_EQ(decode(out[0], Format::kE4M3), 2.0f);
  EXPECT_EQ(decode(out[1], Format::kE4M3), -6.0f);
  EXPECT_EQ(out[4], 0x80);
}

// quantize() encodes through 64K-entry tables (fp8.cpp): it must equal encode() for every upper
// 16-bit pattern of a float, with lower bits zero, one, the extremes, the half point and random.
TEST(Fp8Bulk, TableEncoderEqualsEncodeForEveryUpperHalf) {
  std::mt19937 rng(7);
  for (Format f : {Format::kE4M3, Format::kE5M2}) {
    std::vector<float> in;
    in.reserve(65536 * 6);
    for (std::uint32_t hi = 0; hi < 65536; ++hi) {
      for (std::uint32_t lo :
           {0u, 1u, 0x7FFFu, 0x8000u, 0xFFFFu, static_cast<std::uint32_t>(rng() & 0xFFFFu)}) {
        in.push_back(std::bit_cast<float>((hi << 16) | lo));
      }
    }
    std::vector<std::uint8_t> out(in.size());
    quantize(in, 1.0f, f, out);
    int mismatches = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint8_t want = encode(in[i], f);
      if (out[i] != want && ++mismatches <= 5) {
        ADD_FAILURE() << name(f) << " bits 0x" << std::hex << std::bit_cast<std::uint32_t>(in[i])
                      << ": quantize " << hex(out[i]) << ", encode " << hex(want);
      }
    }
    EXPECT_EQ(mismatches, 0) << name(f);
  }
}

TEST(Fp8Bulk, QuantizeAmaxSeesInfinityAndSkipsNaNAsTransformerEngine) {
  std::vector<std::uint8_t> out(3);
  const std::vector<float> with_inf{1.0f, -kInf, 2.0f};
  EXPECT_EQ(quantize(with_inf, 1.0f, Format::kE5M2, out), kInf);
  EXPECT_EQ(out[1], 0xFB);  // -inf saturates to -max finite

  // TE folds with fmaxf from 0: a NaN, first or last, is skipped; it still encodes to NaN.
  const std::vector<float> nan_first{kNaN, 1.0f, 500.0f};
  EXPECT_EQ(quantize(nan_first, 1.0f, Format::kE4M3, out), 500.0f);
  EXPECT_EQ(out[0], 0x7F);
  EXPECT_EQ(out[1], 0x38);
  EXPECT_EQ(out[2], 0x7E);
  const std::vector<float> nan_last{1.0f, 500.0f, -kNaN};
  EXPECT_EQ(quantize(nan_last, 1.0f, Format::kE4M3, out), 500.0f);
  EXPECT_EQ(out[2], 0xFF);
  // Only NaNs (and zeros): amax 0, which delayed scaling answers by keeping the previous scale.
  const std::vector<float> only_nan{kNaN, 0.0f, -kNaN};
  EXPECT_EQ(quantize(only_nan, 1.0f, Format::kE4M3, out), 0.0f);

  std::vector<std::uint8_t> empty;
  EXPECT_EQ(quantize({}, 1.0f, Format::kE4M3, empty), 0.0f);
}

TEST(Fp8Bulk, SizeMismatchIsAnInternalError) {
  const std::vector<float> in(4, 1.0f);
  std::vector<std::uint8_t> codes(3);
  EXPECT_THROW(quantize(in, 1.0f, Format::kE4M3, codes), InternalError);
  std::vector<float> out(5);
  EXPECT_THROW(dequantize(codes, 1.0f, Format::kE4M3, out), InternalError);
}

TEST(Fp8Bulk, DequantizeMultipliesByScaleInv) {
  const std::vector<std::uint8_t> codes{0x38, 0xB8, 0x7E, 0x00, 0x7F};
  std::vector<float> out(codes.size());
  dequantize(codes, 0.5f, Format::kE4M3, out);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[1], -0.5f);
  EXPECT_EQ(out[2], 224.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_TRUE(std::isnan(out[4]));
}

TEST(Fp8Bulk, Amax) {
  EXPECT_EQ(amax({}), 0.0f);
  const std::vector<float> v{-7.0f, 3.0f, -0.0f};
  EXPECT_EQ(amax(v), 7.0f);
  const std::vector<float> with_inf{1.0f, -kInf};
  EXPECT_EQ(amax(with_inf), kInf);
  const std::vector<float> with_nan{1.0f, kNaN, 9.0f};
  EXPECT_TRUE(std::isnan(amax(with_nan)));
}

// ---- tensors ----

TEST(Fp8Tensor, QuantizeCarriesScaleScaleInvAndAmax) {
  const std::vector<float> values{0.5f, -1.0f, 2.0f, -4.0f, 8.0f, 0.0f};
  const Fp8Tensor t = quantize_tensor(values, 2, 3, Format::kE5M2, 4.0f);
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.cols, 3);
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.format, Format::kE5M2);
  EXPECT_EQ(t.scale, 4.0f);
  EXPECT_EQ(t.scale_inv, 0.25f);
  EXPECT_EQ(t.amax, 8.0f);
  ASSERT_EQ(t.data.size(), values.size());
  // Powers of two survive the round trip exactly.
  EXPECT_EQ(dequantize_tensor(t), values);
}

TEST(Fp8Tensor, SizeMismatchIsAnInternalError) {
  const std::vector<float> values(6, 1.0f);
  EXPECT_THROW(quantize_tensor(values, 2, 2, Format::kE4M3, 1.0f), InternalError);
  EXPECT_THROW(quantize_tensor(values, -2, -3, Format::kE4M3, 1.0f), InternalError);
  Fp8Tensor t = quantize_tensor(values, 3, 2, Format::kE4M3, 1.0f);
  t.data.pop_back();
  EXPECT_THROW(dequantize_tensor(t), InternalError);
}

// ---- bf16 ----

static_assert(bf16_bits(1.0f) == 0x3F80);
static_assert(bf16_value(0x3F80) == 1.0f);
static_assert(bf16_bits(-2.0f) == 0xC000);

// Reference: of the two bf16 values around x (truncation and the next one up in magnitude), the
// nearer by exact double distance, ties to the even one.
std::uint16_t reference_bf16(float x) {
  const auto truncated = static_cast<std::uint16_t>(bits_of(x) >> 16);
  const auto next = static_cast<std::uint16_t>(truncated + 1);
  const double lo = static_cast<double>(bf16_value(truncated));
  // One past the largest finite bf16 is infinity; the rounding boundary is still halfway to 2^128.
  const double hi = (next & 0x7FFFu) == 0x7F80u ? std::copysign(std::ldexp(1.0, 128), lo)
                                                : static_cast<double>(bf16_value(next));
  const double d_lo = std::fabs(static_cast<double>(x) - lo);
  const double d_hi = std::fabs(static_cast<double>(x) - hi);
  if (d_lo < d_hi || (d_lo == d_hi && (truncated & 1u) == 0)) return truncated;
  return next;
}

TEST(Bf16, RoundsToNearestEven) {
  const float one = 1.0f;
  const float ulp = std::ldexp(1.0f, -7);                // bf16 spacing at 1
  EXPECT_EQ(bf16_bits(one + ulp / 2), 0x3F80);           // tie, even stays
  EXPECT_EQ(bf16_bits(up(one + ulp / 2)), 0x3F81);       // just above the tie
  EXPECT_EQ(bf16_bits(one + 1.5f * ulp), 0x3F82);        // tie, odd goes up
  EXPECT_EQ(bf16_bits(down(one + 1.5f * ulp)), 0x3F81);  // just below
  EXPECT_EQ(bf16_bits(-(one + 1.5f * ulp)), 0xBF82);     // sign symmetric
  EXPECT_EQ(bf16_bits(2.0f - ulp / 2), 0x4000);          // carry into exponent
  EXPECT_EQ(bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(kInf), 0x7F80);
  EXPECT_EQ(bf16_bits(-kInf), 0xFF80);
  EXPECT_EQ(bf16_bits(FLT_MAX), 0x7F80);  // past the largest bf16's halfway point
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(bf16_value(0x7F7F), from_bits(0x7F7F0000u));
  EXPECT_EQ(bf16_value(0xBF80), -1.0f);
}

TEST(Bf16, NaNStaysQuietNaNWithItsSign) {
  EXPECT_EQ(bf16_bits(kNaN), 0x7FC0);
  EXPECT_EQ(bf16_bits(-kNaN), 0xFFC0);
  // Low payload only: truncation would give infinity.
  EXPECT_EQ(bf16_bits(from_bits(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(bf16_bits(from_bits(0xFFFFFFFFu)), 0xFFC0);
  EXPECT_TRUE(std::isnan(bf16_value(0x7FC0)));
  EXPECT_TRUE(std::signbit(bf16_value(0xFFC0)));
}

TEST(Bf16, MatchesReferenceOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  int failures = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const float x = from_bits(any_bits(rng));
    if (!std::isfinite(x)) continue;  // covered above; the reference measures finite distances
    const std::uint16_t got = bf16_bits(x);
    const std::uint16_t want = reference_bf16(x);
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << "x bits " << bits_of(x) << ": " << got << " vs reference " << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace shakedown::fp8
