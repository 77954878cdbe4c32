#pragma once
// One GEMM shape as rank 0 stores it (schema.hpp /gemm/<shape>/): used by the gemm phase and by
// the scale generator (bench/gen_runfile.cpp), so both write the same layout.
#include <cstdint>
#include <string>
#include <vector>

#include "record/writer.hpp"

namespace shakedown {

struct GemmShapeRecord {
  std::int64_t order = 0;  // the shape's step number in the phase
  std::int64_t m = 0, n = 0, k = 0;
  std::string a_format, b_format, out_dtype, engine;
  bool fast_accum = false;
  double flop = 0;           // 2mnk
  std::int64_t skipped = 0;  // 0 measured; otherwise only skip_reason is stored
  std::string skip_reason;
  std::uint64_t iters = 0;
  std::vector<double> time_us;  // [iters, world]; tflops is derived from it and flop
  std::vector<double> max_rel_err, err_bound_ratio, worst_expected, worst_got;  // [world]
  std::vector<std::int64_t> worst_index, rows_checked, hash_group;              // [world]
  std::vector<std::uint64_t> output_hash;                                       // [world]
  std::vector<std::string> hash_groups;  // the engine description of each hash group
  std::string unchecked;                 // ranks whose output was not checked, and why
};

// Writes the shape's group at `path` in one batch.
void write_gemm_shape(RunWriter& w, const std::string& path, const GemmShapeRecord& g);

}  // namespace shakedown
