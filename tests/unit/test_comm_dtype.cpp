// Dtype names and sizes, and the small-float codecs (half.hpp) the patterns store and load with:
// every code of every format, against independent references.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/half.hpp"
#include "comm/pattern_math.hpp"
#include "comm_support.hpp"

namespace shakedown {
namespace {

using testing_support::kAllDTypes;

TEST(CommDType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kInt32), 4u);
  EXPECT_EQ(dtype_size(DType::kFp8E4M3), 1u);
  EXPECT_EQ(dtype_size(DType::kFp8E5M2), 1u);
  EXPECT_EQ(dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::kFloat16), "float16");
  EXPECT_EQ(dtype_name(DType::kInt32), "int32");
  EXPECT_EQ(dtype_name(DType::kFp8E4M3), "fp8_e4m3");
  EXPECT_EQ(dtype_name(DType::kFp8E5M2), "fp8_e5m2");
}

TEST(CommDType, ParseRoundTrip) {
  for (DType t : kAllDTypes) {
    const auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(t);
    EXPECT_EQ(*parsed, t);
  }
  for (const char* bad :
       {"", "float", "Float32", "fp32", "bf16", "half", "fp8", "int32 ", "e4m3"}) {
    EXPECT_FALSE(parse_dtype(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(CommDType, ReduceOps) {
  EXPECT_EQ(reduce_op_name(ReduceOp::kSum), "sum");
  EXPECT_EQ(reduce_op_name(ReduceOp::kMax), "max");
  EXPECT_EQ(parse_reduce_op("sum"), ReduceOp::kSum);
  EXPECT_EQ(parse_reduce_op("max"), ReduceOp::kMax);
  for (const char* bad : {"", "Sum", "min", "prod", "avg", "sum "}) {
    EXPECT_FALSE(parse_reduce_op(bad).has_value()) << '"' << bad << '"';
  }
}

// ---- small floats ----

struct Codec {
  const char* name;
  int mant;
  int exp;
  bool ieee;
  std::uint32_t (*encode)(double);
  double (*decode)(std::uint32_t);
};

const Codec kCodecs[] = {
    {"bfloat16", 7, 8, true,
     [](double v) -> std::uint32_t { return small_float::bf16_from_double(v); },
     [](std::uint32_t b) { return small_float::bf16_to_double(static_cast<std::uint16_t>(b)); }},
    {"float16", 10, 5, true,
     [](double v) -> std::uint32_t { return small_float::fp16_from_double(v); },
     [](std::uint32_t b) { return small_float::fp16_to_double(static_cast<std::uint16_t>(b)); }},
    {"e4m3", 3, 4, false,
     [](double v) -> std::uint32_t { return small_float::e4m3_from_double(v); },
     [](std::uint32_t b) { return small_float::e4m3_to_double(static_cast<std::uint8_t>(b)); }},
    {"e5m2", 2, 5, true, [](double v) -> std::uint32_t { return small_float::e5m2_from_double(v); },
     [](std::uint32_t b) { return small_float::e5m2_to_double(static_cast<std::uint8_t>(b)); }},
};

std::uint32_t code_count(const Codec& c) {
  return 1u << (1 + c.mant + c.exp);
}

// Independent decoder (std::ldexp, written from the format definitions).
double reference_decode(const Codec& c, std::uint32_t bits) {
  const int bias = (1 << (c.exp - 1)) - 1;
  const std::uint32_t exp_ones = (1u << c.exp) - 1;
  const std::uint32_t mant_ones = (1u << c.mant) - 1;
  const bool neg = ((bits >> (c.mant + c.exp)) & 1u) != 0;
  const std::uint32_t e = (bits >> c.mant) & exp_ones;
  const std::uint32_t m = bits & mant_ones;
  double mag = 0;
  if (c.ieee && e == exp_ones) {
    if (m != 0) return std::numeric_limits<double>::quiet_NaN();
    mag = std::numeric_limits<double>::infinity();
  } else if (!c.ieee && e == exp_ones && m == mant_ones) {
    return std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(m), 1 - bias - c.mant);
  } else {
    mag = std::ldexp(static_cast<double>(m + (1u << c.mant)), static_cast<int>(e) - bias - c.mant);
  }
  return neg ? -mag : mag;
}

TEST(CommSmallFloat, DecodeMatchesReferenceForEveryCode) {
  for (const Codec& c : kCodecs) {
    for (std::uint32_t b = 0; b < code_count(c); ++b) {
      const double want = reference_decode(c, b);
      const double got = c.decode(b);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << c.name << " code " << b;
      } else {
        EXPECT_EQ(got, want) << c.name << " code " << b;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << c.name << " code " << b;
      }
    }
  }
}

TEST(CommSmallFloat, KnownValues) {
  using namespace small_float;
  EXPECT_EQ(bf16_to_double(0x3f80), 1.0);
  EXPECT_EQ(bf16_to_double(0x4380), 256.0);
  EXPECT_EQ(bf16_to_double(0x7f7f), 0x1.fep127);
  EXPECT_EQ(fp16_to_double(0x3c00), 1.0);
  EXPECT_EQ(fp16_to_double(0x7bff), 65504.0);
  EXPECT_EQ(fp16_to_double(0x0001), 0x1p-24);
  EXPECT_TRUE(std::isinf(fp16_to_double(0x7c00)));
  EXPECT_EQ(e4m3_to_double(0x7e), 448.0);
  EXPECT_EQ(e4m3_to_double(0x01), 0x1p-9);
  EXPECT_EQ(e4m3_to_double(0x78), 256.0);
  EXPECT_TRUE(std::isnan(e4m3_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_double(0xff)));
  EXPECT_EQ(e5m2_to_double(0x7b), 57344.0);
  EXPECT_EQ(e5m2_to_double(0x01), 0x1p-16);
  EXPECT_TRUE(std::isinf(e5m2_to_double(0x7c)));
  EXPECT_TRUE(std::isnan(e5m2_to_double(0x7d)));
  // Usable in constant expressions (the pattern values at least).
  static_assert(bf16_from_double(-256.0) == 0xc380);
  static_assert(e4m3_from_double(16.0) == 0x58);
  static_assert(e5m2_to_double(e5m2_from_double(-8.0)) == -8.0);
}

TEST(CommSmallFloat, EncodeInvertsDecodeForEveryCode) {
  for (const Codec& c : kCodecs) {
    const std::uint32_t sign = 1u << (c.mant + c.exp);
    for (std::uint32_t b = 0; b < code_count(c); ++b) {
      const double v = c.decode(b);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(c.decode(c.encode(v)))) << c.name << " code " << b;
      } else if (v == 0) {
        EXPECT_EQ(c.encode(v), 0u) << c.name << " code " << b;  // -0 is stored as +0
      } else {
        EXPECT_EQ(c.encode(v), b) << c.name << " code " << b;
      }
    }
    EXPECT_EQ(c.encode(0.0), 0u);
    EXPECT_EQ(c.encode(-0.0), 0u);
    EXPECT_TRUE(std::isnan(c.decode(c.encode(std::numeric_limits<double>::quiet_NaN()))));
    const double inf = std::numeric_limits<double>::infinity();
    if (c.ieee) {
      EXPECT_TRUE(std::isinf(c.decode(c.encode(inf))) && c.decode(c.encode(inf)) > 0) << c.name;
      EXPECT_EQ(c.encode(-inf), c.encode(inf) | sign) << c.name;
    } else {
      EXPECT_TRUE(std::isnan(c.decode(c.encode(inf)))) << c.name;
    }
  }
}

// Reference rounding: nearest finite value by search in the sorted table of all codes, ties to
// the even code, overflow past max + half an ulp.
struct Table {
  std::vector<double> values;  // non-negative finite values, ascending (code order)
  std::vector<std::uint32_t> codes;
};

Table positive_table(const Codec& c) {
  Table t;
  for (std::uint32_t b = 0; b < (1u << (c.mant + c.exp)); ++b) {
    const double v = c.decode(b);
    if (std::isfinite(v)) {
      t.values.push_back(v);
      t.codes.push_back(b);
    }
  }
  return t;
}

// Expected code for |v| (finite, non-negative); `overflow` when it rounds past the largest.
std::uint32_t reference_round(const Table& t, double a, bool& overflow) {
  overflow = false;
  const auto it = std::lower_bound(t.values.begin(), t.values.end(), a);
  if (it != t.values.end() && *it == a)
    return t.codes[static_cast<std::size_t>(it - t.values.begin())];
  if (it == t.values.end()) {
    // Beyond the largest finite: the next step would be one ulp up.
    const double top = t.values.back();
    const double ulp = top - t.values[t.values.size() - 2];
    const std::uint32_t top_code = t.codes.back();
    if (a < top + ulp / 2 || (a == top + ulp / 2 && (top_code & 1u) == 0)) return top_code;
    overflow = true;
    return 0;
  }
  const std::size_t hi = static_cast<std::size_t>(it - t.values.begin());
  const double up = t.values[hi];
  const double down = t.values[hi - 1];
  if (a - down < up - a) return t.codes[hi - 1];
  if (up - a < a - down) return t.codes[hi];
  return (t.codes[hi - 1] & 1u) == 0 ? t.codes[hi - 1] : t.codes[hi];
}

TEST(CommSmallFloat, EncodeRoundsToNearestEven) {
  std::mt19937_64 rng(12345);
  for (const Codec& c : kCodecs) {
    const Table t = positive_table(c);
    const std::uint32_t sign = 1u << (c.mant + c.exp);
    std::vector<double> probes;
    // Every midpoint and quarter point between neighbours, and random values at every scale.
    for (std::size_t k = 0; k + 1 < t.values.size(); ++k) {
      const double lo = t.values[k], hi = t.values[k + 1];
      for (double f : {0.25, 0.5, 0.75}) probes.push_back(lo + (hi - lo) * f);
    }
    const double top = t.values.back();
    for (double f : {1.01, 1.03, 1.04, 1.1, 1.5, 2.0, 1e6}) probes.push_back(top * f);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int k = 0; k < 20000; ++k) {
      const int e = static_cast<int>(rng() % 300) - 150;
      probes.push_back(std::ldexp(1.0 + unit(rng), e));
    }
    for (double a : probes) {
      bool overflow = false;
      const std::uint32_t want = reference_round(t, a, overflow);
      for (bool neg : {false, true}) {
        const double v = neg ? -a : a;
        const std::uint32_t got = c.encode(v);
        if (overflow) {
          const double d = c.decode(got);
          if (c.ieee) {
            EXPECT_TRUE(std::isinf(d) && std::signbit(d) == neg) << c.name << " " << v;
          } else {
            EXPECT_TRUE(std::isnan(d)) << c.name << " " << v;
          }
        } else if (want == 0) {
          EXPECT_EQ(got, 0u) << c.name << " " << v;  // underflow to +0
        } else {
          EXPECT_EQ(got, want | (neg ? sign : 0u)) << c.name << " " << std::hexfloat << v;
        }
      }
    }
  }
}

TEST(CommSmallFloat, Bf16MatchesFloatRounding) {
  // bfloat16 is the top half of a float: round-to-nearest-even on the float's bits.
  std::mt19937 rng(7);
  for (int k = 0; k < 200000; ++k) {
    const std::uint32_t bits = static_cast<std::uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    std::uint32_t want = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    if ((want & 0x7fffu) == 0) want = 0;  // -0 (and underflow to -0) is stored as +0
    EXPECT_EQ(small_float::bf16_from_double(static_cast<double>(f)), want) << std::hex << bits;
    const std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);
    if (!std::isnan(small_float::bf16_to_double(h))) {
      EXPECT_EQ(small_float::bf16_to_double(h),
                static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16)));
    }
  }
}

TEST(CommSmallFloat, Pow2) {
  for (int k = -1022; k <= 1023; ++k) EXPECT_EQ(small_float::pow2(k), std::ldexp(1.0, k)) << k;
}

// ---- elements: every integer of the pattern range round-trips in every dtype ----

TEST(CommElements, IntegersInPatternRangeAreExact) {
  for (DType t : kAllDTypes) {
    const std::int64_t limit = static_cast<std::int64_t>(pattern_limit(t));
    std::vector<unsigned char> buf(16 * dtype_size(t));
    std::vector<std::int64_t> values;
    if (limit <= 4096) {
      for (std::int64_t v = -limit; v <= limit; ++v) values.push_back(v);
    } else {
      std::mt19937_64 rng(3);
      for (int k = 0; k < 100000; ++k) {
        values.push_back(
            static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * limit + 1)) - limit);
      }
      for (std::int64_t v : {-limit, -limit + 1, std::int64_t{-1}, std::int64_t{0}, std::int64_t{1},
                             limit - 1, limit}) {
        values.push_back(v);
      }
    }
    for (std::int64_t v : values) {
      const std::uint64_t slot = static_cast<std::uint64_t>(v) % 16;
      store_element(buf.data(), t, slot, static_cast<double>(v));
      ASSERT_EQ(load_element(buf.data(), t, slot), static_cast<double>(v)) << dtype_name(t);
    }
    // One past the limit is not exact (the limit is the largest such range), except int32.
    if (t != DType::kInt32) {
      store_element(buf.data(), t, 0, static_cast<double>(limit + 1));
      EXPECT_NE(load_element(buf.data(), t, 0), static_cast<double>(limit + 1)) << dtype_name(t);
    }
  }
}

TEST(CommElements, StoreLoadLayout) {
  // Elements sit at i * size, in the machine's layout (what NCCL and MPI see).
  std::vector<unsigned char> buf(64, 0xAA);
  store_element(buf.data(), DType::kFloat32, 3, 1.0);
  EXPECT_EQ(
      std::bit_cast<std::uint32_t>(1.0f),
      static_cast<std::uint32_t>(buf[12] | (buf[13] << 8) | (buf[14] << 16) | (buf[15] << 24)));
  store_element(buf.data(), DType::kBFloat16, 20, -2.0);
  EXPECT_EQ(buf[40], 0x00);
  EXPECT_EQ(buf[41], 0xc0);
  store_element(buf.data(), DType::kFp8E4M3, 50, 448.0);
  EXPECT_EQ(buf[50], 0x7e);
  store_element(buf.data(), DType::kInt32, 13, -5.0);
  EXPECT_EQ(load_element(buf.data(), DType::kInt32, 13), -5.0);
  EXPECT_EQ(buf[11], 0xAA);  // neighbours untouched
  EXPECT_EQ(buf[56], 0xAA);
  // int32 saturates and maps NaN to 0 instead of undefined behaviour.
  store_element(buf.data(), DType::kInt32, 0, 1e300);
  EXPECT_EQ(load_element(buf.data(), DType::kInt32, 0), 2147483647.0);
  store_element(buf.data(), DType::kInt32, 0, -1e300);
  EXPECT_EQ(load_element(buf.data(), DType::kInt32, 0), -2147483648.0);
  store_element(buf.data(), DType::kInt32, 0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(load_element(buf.data(), DType::kInt32, 0), 0.0);
}

TEST(CommElements, MatchesIsBitExact) {
  EXPECT_TRUE(matches(3.0, 3.0));
  EXPECT_TRUE(matches(0.0, 0.0));
  EXPECT_FALSE(matches(-0.0, 0.0));
  EXPECT_FALSE(matches(3.0, 4.0));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(matches(nan, nan));
  EXPECT_FALSE(matches(nan, 1.0));
}

TEST(CommElements, CorruptedValueDiffersAndIsExact) {
  for (DType t : kAllDTypes) {
    const double limit = static_cast<double>(pattern_limit(t));
    std::vector<unsigned char> buf(8);
    for (double v : {-limit, -limit + 1, -1.0, 0.0, 1.0, 2.0, limit - 1, limit}) {
      const double c = corrupted_value(t, v);
      EXPECT_NE(c, v);
      store_element(buf.data(), t, 1, c);
      EXPECT_EQ(load_element(buf.data(), t, 1), c) << dtype_name(t) << " " << v;
    }
    EXPECT_EQ(corrupted_value(t, std::numeric_limits<double>::quiet_NaN()), 0.0);
    EXPECT_EQ(corrupted_value(t, limit * 4), 0.0);
  }
}

}  // namespace
}  // namespace shakedown
