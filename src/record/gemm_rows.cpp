#include "record/gemm_rows.hpp"

#include "record/schema.hpp"

namespace shakedown {

void write_gemm_shape(RunWriter& w, const std::string& path, const GemmShapeRecord& r) {
  namespace g = schema::gemm;
  const std::uint64_t w64 = r.max_rel_err.size();
  const std::uint64_t i64 = r.iters;
  w.batch([&] {
    w.set_attr(path, g::kAttrOrder, r.order);
    w.set_attr(path, g::kAttrM, r.m);
    w.set_attr(path, g::kAttrN, r.n);
    w.set_attr(path, g::kAttrK, r.k);
    w.set_attr(path, g::kAttrAFormat, r.a_format);
    w.set_attr(path, g::kAttrBFormat, r.b_format);
    w.set_attr(path, g::kAttrOutDtype, r.out_dtype);
    w.set_attr(path, g::kAttrFastAccum, r.fast_accum ? 1 : 0);
    w.set_attr(path, g::kAttrFlop, r.flop);
    w.set_attr(path, g::kAttrEngine, r.engine);
    w.set_attr(path, g::kAttrSkipped, r.skipped);
    if (r.skipped != schema::kSkipMeasured) {
      w.set_attr(path, g::kAttrSkipReason, r.skip_reason);
      return;
    }
    std::vector<double> tflops(r.time_us.size());
    for (std::size_t i = 0; i < r.time_us.size(); ++i) {
      tflops[i] = r.flop / (r.time_us[i] * 1e-6) / 1e12;
    }
    w.write_array(path, g::kTimeUs, r.time_us, {i64, w64});
    w.write_array(path, g::kTflops, tflops, {i64, w64});
    w.write_array(path, g::kMaxRelErr, r.max_rel_err, {w64});
    w.write_array(path, g::kErrBoundRatio, r.err_bound_ratio, {w64});
    w.write_array(path, g::kWorstIndex, r.worst_index, {w64});
    w.write_array(path, g::kWorstExpected, r.worst_expected, {w64});
    w.write_array(path, g::kWorstGot, r.worst_got, {w64});
    w.write_array(path, g::kRowsChecked, r.rows_checked, {w64});
    w.write_array(path, g::kOutputHash, r.output_hash, {w64});
    w.write_array(path, g::kHashGroup, r.hash_group, {w64});
    for (std::size_t i = 0; i < r.hash_groups.size(); ++i) {
      w.set_attr(path, g::kAttrHashGroupPrefix + std::to_string(i), r.hash_groups[i]);
    }
    w.set_attr(path, g::kAttrHashGroups, static_cast<std::int64_t>(r.hash_groups.size()));
    if (!r.unchecked.empty()) w.set_attr(path, g::kAttrUnchecked, r.unchecked);
  });
}

}  // namespace shakedown
