#pragma once
// FP8 formats of the OCP FP8 spec (arXiv 2209.05433) as NVIDIA Transformer Engine uses them: E4M3
// (bias 7, max 448, no infinity, S.1111.111 is NaN) and E5M2 (bias 15, max 57344, IEEE-like
// infinities and NaNs). Encoding rounds to nearest even and saturates to the format's largest
// finite magnitude (as __NV_SATFINITE / cvt.rn.satfinite do), so a scale that is slightly off clips
// the few largest values instead of turning them into NaN or infinity; NaN stays NaN. Pure C++: no
// dependencies, so the CPU and GPU paths share it.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace shakedown::fp8 {

enum class Format : std::uint8_t { kE4M3, kE5M2 };

struct FormatInfo {
  std::string_view name;  // "e4m3" | "e5m2"
  int exponent_bits;
  int mantissa_bits;
  int bias;
  float max_finite;              // 448 | 57344
  float min_normal;              // 2^-6 | 2^-14
  float min_subnormal;           // 2^-9 | 2^-16
  bool has_infinity;             // false | true
  std::uint8_t max_finite_code;  // 0x7E | 0x7B (add 0x80 for the negative one)
  std::uint8_t nan_code;         // 0x7F | 0x7F: what encode(NaN) gives (0xFF with the sign set)
};

const FormatInfo& info(Format format);
std::string_view name(Format format);
// "e4m3" / "e5m2" (case-insensitive); throws UsageError listing the choices otherwise.
Format parse_format(std::string_view text);

// One value, rounded to nearest even (ties to even also where a tie straddles the subnormal/normal
// boundary, and half the smallest subnormal rounds to signed zero). Finite values beyond max_finite
// and +-inf saturate to +-max_finite. -0 encodes to 0x80. NaN encodes to nan_code with its sign:
// 0x7F/0xFF, which for E4M3 is its only NaN and for E5M2 is S.11111.11, the pattern a NaN with the
// top mantissa bits set (the quiet NaN every float operation produces) truncates to.
std::uint8_t encode(float x, Format format);
// Exact (every FP8 value is a float). NaN codes decode to NaN with the code's sign, E5M2
// infinities to +-inf.
float decode(std::uint8_t code, Format format);
// All 256 codes decoded, as decode() gives them; built once, never changes.
const std::array<float, 256>& decode_table(Format format);

// Bulk casts. quantize: out[i] = encode(in[i] * scale) with the product rounded to float first (as
// the GPU kernels compute it); returns amax = max |in[i]| of the unscaled input as Transformer
// Engine's kernels reduce it (fmaxf from 0): infinite inputs win, NaN inputs are skipped (they
// still encode to NaN), so one NaN does not turn the tensor's scale into "no information". A
// tensor of only NaNs and zeros gives 0, and a 0 amax keeps the previous scale
// (fp8::delayed_scale). Finding NaNs is the job of the checks that look at values (the GEMM
// output's fp8::amax below, the train phase's finiteness check), not of the scale.
// Throws InternalError unless in and out have the same size.
float quantize(std::span<const float> in, float scale, Format format, std::span<std::uint8_t> out);
// out[i] = decode(in[i]) * scale_inv. Throws InternalError unless in and out have the same size.
void dequantize(std::span<const std::uint8_t> in, float scale_inv, Format format,
                std::span<float> out);
// max |x| (0 for no values, NaN if any element is NaN): a check of values (the GEMM output), where
// a NaN must show. Not a scaling amax: that is quantize's, which skips NaN as TE does.
float amax(std::span<const float> values);

}  // namespace shakedown::fp8
