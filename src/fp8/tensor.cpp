#include "fp8/tensor.hpp"

#include <string>

#include "core/error.hpp"

namespace shakedown::fp8 {

Fp8Tensor quantize_tensor(std::span<const float> values, std::int64_t rows, std::int64_t cols,
                          Format format, float scale) {
  if (rows < 0 || cols < 0 ||
      static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != values.size()) {
    throw InternalError("fp8::quantize_tensor: " + std::to_string(rows) + " x " +
                        std::to_string(cols) + " tensor given " + std::to_string(values.size()) +
                        " values");
  }
  Fp8Tensor tensor;
  tensor.rows = rows;
  tensor.cols = cols;
  tensor.format = format;
  tensor.data.resize(values.size());
  tensor.amax = quantize(values, scale, format, tensor.data);
  tensor.scale = scale;
  tensor.scale_inv = 1.0f / scale;
  return tensor;
}

std::vector<float> dequantize_tensor(const Fp8Tensor& tensor) {
  if (tensor.rows < 0 || tensor.cols < 0 ||
      static_cast<std::uint64_t>(tensor.rows) * static_cast<std::uint64_t>(tensor.cols) !=
          tensor.data.size()) {
    throw InternalError("fp8::dequantize_tensor: " + std::to_string(tensor.rows) + " x " +
                        std::to_string(tensor.cols) + " tensor holds " +
                        std::to_string(tensor.data.size()) + " codes");
  }
  std::vector<float> values(tensor.data.size());
  dequantize(tensor.data, tensor.scale_inv, tensor.format, values);
  return values;
}

}  // namespace shakedown::fp8
