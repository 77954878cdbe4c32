#include "fp8/fp8.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown::fp8 {

namespace {

constexpr FormatInfo kE4M3Info{"e4m3", 4, 3, 7, 448.0f, 0x1p-6f, 0x1p-9f, false, 0x7E, 0x7F};
constexpr FormatInfo kE5M2Info{"e5m2", 5, 2, 15, 57344.0f, 0x1p-14f, 0x1p-16f, true, 0x7B, 0x7F};

constexpr const FormatInfo& info_of(Format format) {
  return format == Format::kE4M3 ? kE4M3Info : kE5M2Info;
}

// The encoding works on the float's bits with integer rounding, so it is exact by construction:
// no intermediate rounding step that could turn a tie into a non-tie or the reverse.
template <Format F>
std::uint8_t encode_as(float x) {
  constexpr const FormatInfo& kInfo = info_of(F);
  constexpr int kMantissa = kInfo.mantissa_bits;
  constexpr int kEmin = 1 - kInfo.bias;  // exponent of the smallest normal

  const auto bits = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | kInfo.nan_code;
  if (magnitude == 0x7F800000u) return sign | kInfo.max_finite_code;  // satfinite
  if (magnitude == 0) return sign;

  // |x| = significand * 2^(exponent - 23). Float subnormals have exponent -126 and no implicit
  // bit; all of them lie far below FP8's subnormal range and round to zero below.
  const int biased = static_cast<int>(magnitude >> 23);
  std::uint32_t significand = magnitude & 0x7FFFFFu;
  int exponent = -126;
  if (biased != 0) {
    significand |= 0x800000u;
    exponent = biased - 127;
  }
  // The FP8 quantum at |x|: 2^(exponent - M) among normals, 2^(kEmin - M) among subnormals.
  const int quantum_exponent = (exponent < kEmin ? kEmin : exponent) - kMantissa;
  // How many quanta |x| is: significand >> shift, rounded to nearest even.
  const int shift = quantum_exponent - (exponent - 23);  // >= 23 - M > 0
  std::uint32_t quanta = 0;
  if (shift < 32) {
    const std::uint32_t rest = significand & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    quanta = significand >> shift;
    if (rest > half || (rest == half && (quanta & 1u) != 0)) ++quanta;
  }  // else significand < 2^24 <= 2^(shift - 8): far below half a quantum, rounds to 0

  // Normals: quanta is 2^M + mantissa and the exponent field is exponent - kEmin + 1, so the code
  // is ((exponent - kEmin) << M) + quanta. Subnormals: the exponent field is 0 and the code is
  // quanta. Rounding up to 2^(M+1) quanta (or to 2^M among subnormals) carries into the exponent
  // field, which is exactly the next binade's first code.
  const int field = exponent < kEmin ? 0 : exponent - kEmin;
  const std::uint32_t code = (static_cast<std::uint32_t>(field) << kMantissa) + quanta;
  // Rounding is monotonic, so anything that rounds past the largest finite code saturates.
  if (code > kInfo.max_finite_code) return sign | kInfo.max_finite_code;
  return static_cast<std::uint8_t>(sign | code);
}

float decode_slow(std::uint8_t code, Format format) {
  const FormatInfo& fi = info_of(format);
  const bool negative = (code & 0x80u) != 0;
  const int mantissa_mask = (1 << fi.mantissa_bits) - 1;
  const int mantissa = code & mantissa_mask;
  const int field = (code & 0x7F) >> fi.mantissa_bits;
  const int field_all_ones = (1 << fi.exponent_bits) - 1;
  float magnitude = 0.0f;
  if (fi.has_infinity && field == field_all_ones) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
  } else if (!fi.has_infinity && field == field_all_ones && mantissa == mantissa_mask) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (field == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), 1 - fi.bias - fi.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + (1 << fi.mantissa_bits)),
                           field - fi.bias - fi.mantissa_bits);
  }
  return std::copysign(magnitude, negative ? -1.0f : 1.0f);
}

std::array<float, 256> build_table(Format format) {
  std::array<float, 256> table{};
  for (std::size_t c = 0; c < table.size(); ++c) {
    table[c] = decode_slow(static_cast<std::uint8_t>(c), format);
  }
  return table;
}

void check_sizes(std::size_t in, std::size_t out, const char* what) {
  if (in != out) {
    throw InternalError(std::string("fp8::") + what + ": input has " + std::to_string(in) +
                        " elements but output has " + std::to_string(out));
  }
}

// The bulk encoder's tables: the code of every float whose lower 16 bits are zero, and of the same
// float with lower bits 0x0001. That is exact for every float: FP8 keeps at most 3 mantissa bits,
// so every rounding boundary (a tie, half the smallest subnormal, the saturation point) and the
// infinity pattern have their lower 16 bits zero. A float strictly between two such grid points
// therefore rounds like the grid point below it, unless that point is itself a boundary (a tie
// rounded down to even, or infinity), where any nonzero lower bits mean "above": the second
// table holds that answer. Built by encode_as, so it can only be as right as encode_as.
struct EncodeTables {
  std::array<std::uint8_t, 65536> low_zero;
  std::array<std::uint8_t, 65536> low_set;
};

template <Format F>
const EncodeTables& encode_tables() {
  static const EncodeTables kTables = [] {
    EncodeTables t{};
    for (std::uint32_t hi = 0; hi < 65536; ++hi) {
      t.low_zero[hi] = encode_as<F>(std::bit_cast<float>(hi << 16));
      t.low_set[hi] = encode_as<F>(std::bit_cast<float>((hi << 16) | 1u));
    }
    return t;
  }();
  return kTables;
}

// One pass: the scaled values encoded through the tables, and the amax of the unscaled input.
template <Format F>
float quantize_as(std::span<const float> in, float scale, std::span<std::uint8_t> out) {
  const EncodeTables& t = encode_tables<F>();
  // TE's amax: fmaxf from 0, so a NaN element is skipped (a > max_abs is false for NaN).
  float max_abs = 0.0f;
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float v = in[i];
    const auto bits = std::bit_cast<std::uint32_t>(v * scale);
    const std::uint32_t hi = bits >> 16;
    out[i] = (bits & 0xFFFFu) != 0 ? t.low_set[hi] : t.low_zero[hi];
    const float a = std::fabs(v);
    max_abs = a > max_abs ? a : max_abs;
  }
  return max_abs;
}

}  // namespace

const FormatInfo& info(Format format) {
  return info_of(format);
}

std::string_view name(Format format) {
  return info_of(format).name;
}

Format parse_format(std::string_view text) {
  const std::string lower = lowercase(text);
  if (lower == kE4M3Info.name) return Format::kE4M3;
  if (lower == kE5M2Info.name) return Format::kE5M2;
  const std::vector<std::string_view> choices{kE4M3Info.name, kE5M2Info.name};
  throw UsageError("FP8 format '" + std::string(text) + "' is not " + join_choices(choices) +
                   did_you_mean(text, choices));
}

std::uint8_t encode(float x, Format format) {
  return format == Format::kE4M3 ? encode_as<Format::kE4M3>(x) : encode_as<Format::kE5M2>(x);
}

const std::array<float, 256>& decode_table(Format format) {
  // Function-local statics: built once, thread-safe, immutable afterwards.
  static const std::array<float, 256> kE4M3Table = build_table(Format::kE4M3);
  static const std::array<float, 256> kE5M2Table = build_table(Format::kE5M2);
  return format == Format::kE4M3 ? kE4M3Table : kE5M2Table;
}

float decode(std::uint8_t code, Format format) {
  return decode_table(format)[code];
}

float quantize(std::span<const float> in, float scale, Format format, std::span<std::uint8_t> out) {
  check_sizes(in.size(), out.size(), "quantize");
  return format == Format::kE4M3 ? quantize_as<Format::kE4M3>(in, scale, out)
                                 : quantize_as<Format::kE5M2>(in, scale, out);
}

void dequantize(std::span<const std::uint8_t> in, float scale_inv, Format format,
                std::span<float> out) {
  check_sizes(in.size(), out.size(), "dequantize");
  const std::array<float, 256>& table = decode_table(format);
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = table[in[i]] * scale_inv;
}

float amax(std::span<const float> values) {
  float max_abs = 0.0f;
  for (const float v : values) {
    const float a = std::fabs(v);
    if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
    if (a > max_abs) max_abs = a;
  }
  return max_abs;
}

}  // namespace shakedown::fp8
