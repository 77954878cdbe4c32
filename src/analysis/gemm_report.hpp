#pragma once
// The gemm phase's findings and table, from the run file alone: per shape the spread of TFLOP/s
// over ranks and the slowest rank; ranks whose output hash differs from their peers' (silent data
// corruption suspects, compared only among ranks with the same engine, library and device);
// ranks whose output is outside the stated error bound; and stragglers.
#include <string>
#include <vector>

#include "record/reader.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

struct GemmFindings {
  bool ran = false;                 // the file has a /gemm group
  std::vector<CheckResult> checks;  // gemm.output_hash, gemm.numerics, gemm.stragglers, ...
  std::vector<std::string> lines;   // one per finding, naming rank, host, node and shape
  int corrupt_ranks = 0;            // ranks with a differing hash or an out-of-bound output
  bool corrupt = false;  // corrupt_ranks > 0, or ranks disagree with no majority to name one
};

// Straggler thresholds come from the run's own config (checks.straggler_z, _slowdown).
GemmFindings gemm_findings(const RunFile& file);
// "" when the run has no /gemm.
std::string format_gemm(const RunFile& file, const GemmFindings& findings);

}  // namespace shakedown
