#pragma once
// The gemm phase's findings and table, from the run file alone: per shape the spread of TFLOP/s
// over ranks and the slowest rank; ranks whose output hash differs from their peers' (silent data
// corruption suspects, compared only among ranks with the same engine, library and device);
// ranks whose output is outside the stated error bound; and stragglers.
#include <string>
#include <vector>

#include "analysis/run_facts.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"
#include "topology/rank_info.hpp"

namespace shakedown {

// One shape's row of the gemm table.
struct GemmShapeRow {
  std::string name, formats, out_dtype;
  bool measured = false;
  std::string skip_reason;                                   // when not measured
  double min_tflops = 0, median_tflops = 0, max_tflops = 0;  // over ranks' median iterations
  std::vector<double> rank_tflops;  // each rank's median iteration, by rank (NaN: not measured)
  int slowest_rank = -1;
  std::string slowest;        // "2 (host, node 0)", "-" for none
  double err = 0, bound = 0;  // worst normwise error and error/bound over the checked ranks
  std::string hashes;         // "agree (N)", "differ in G group(s)!" ...
};

struct GemmFindings {
  bool ran = false;                // the file has a /gemm group
  std::string engine;              // "cpu" | "cublaslt"
  std::vector<GemmShapeRow> rows;  // in the order the shapes ran
  std::size_t measured = 0;        // shapes with timings
  // gemm.coverage, gemm.output_hash, gemm.numerics, gemm.stragglers: one finding per rank or
  // shape at fault (wrong bits or values are marked corruption), else one saying what passed.
  std::vector<Finding> findings;
  std::vector<std::string> notes;  // what could not be checked, and why
};

// Reads /gemm once; nothing when the config did not ask for gemm. Straggler thresholds come
// from the run's own config (checks.straggler_z, _slowdown).
GemmFindings gemm_findings(const RunFile& file, const RunFacts& facts);
// The table, one line per shape, and what could not be checked; `explain` adds what the columns
// mean. "" when the run has no /gemm.
std::string format_gemm(const GemmFindings& findings, bool explain);

}  // namespace shakedown
