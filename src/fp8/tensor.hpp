#pragma once
// An FP8 tensor carries its data, scale, scale_inv and amax together (as TE's tensors do), so no
// code path can pair data with the wrong scale. Row-major, rows x cols.
#include <cstdint>
#include <span>
#include <vector>

#include "fp8/fp8.hpp"

namespace shakedown::fp8 {

struct Fp8Tensor {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Format format = Format::kE4M3;
  std::vector<std::uint8_t> data;  // rows * cols codes
  float scale = 1.0f;              // what the data was multiplied by before encoding
  float scale_inv = 1.0f;          // 1 / scale: what consumers (the GEMM) multiply by
  float amax = 0.0f;               // max |x| of the values before scaling

  std::int64_t size() const { return rows * cols; }
};

// Quantises `values` (rows*cols, row-major) with `scale`; records amax (of the unscaled values,
// NaN elements skipped as fp8::quantize does) and scale_inv = 1/scale. InternalError unless values.size() == rows*cols.
Fp8Tensor quantize_tensor(std::span<const float> values, std::int64_t rows, std::int64_t cols,
                          Format format, float scale);
// decode(data) * scale_inv. InternalError unless data.size() == rows*cols.
std::vector<float> dequantize_tensor(const Fp8Tensor& tensor);

}  // namespace shakedown::fp8
