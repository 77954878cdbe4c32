#pragma once
// Element types and reductions the collectives sweep. Names match the config strings.
#include <cstddef>
#include <optional>
#include <string_view>

namespace shakedown {

enum class DType { kFloat32, kBFloat16, kFloat16, kInt32, kFp8E4M3, kFp8E5M2 };
enum class ReduceOp { kSum, kMax };

std::size_t dtype_size(DType t);
std::string_view dtype_name(
    DType t);  // "float32", "bfloat16", "float16", "int32", "fp8_e4m3", "fp8_e5m2"
std::optional<DType> parse_dtype(std::string_view name);
std::string_view reduce_op_name(ReduceOp op);  // "sum", "max"
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

}  // namespace shakedown
