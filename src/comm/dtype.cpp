#include "comm/dtype.hpp"

#include <array>

namespace shakedown {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  std::size_t size;
};

// Ordered as the enum, so a row is found by index.
constexpr std::array<DTypeRow, 6> kDTypes{{
    {DType::kFloat32, "float32", 4},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat16, "float16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kFp8E4M3, "fp8_e4m3", 1},
    {DType::kFp8E5M2, "fp8_e5m2", 1},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].type) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order());

const DTypeRow& row(DType t) {
  return kDTypes.at(static_cast<std::size_t>(t));
}

}  // namespace

std::size_t dtype_size(DType t) {
  return row(t).size;
}

std::string_view dtype_name(DType t) {
  return row(t).name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes) {
    if (r.name == name) return r.type;
  }
  return std::nullopt;
}

std::string_view reduce_op_name(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : "max";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "max") return ReduceOp::kMax;
  return std::nullopt;
}

}  // namespace shakedown
