#pragma once
// What the analysis concluded, as stored in /analysis: one Finding per check and subject (a run,
// a phase, a node, a rank, a link, a scope/collective, a GEMM shape), and the verdict's
// attributes. Plain records: analysis/ computes them, record/ stores and reads them back.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "topology/rank_info.hpp"

namespace shakedown {

struct Finding {
  std::string check;  // "collectives.wrong_data", "gemm.stragglers", "placement.gpu_unique"...
  CheckStatus status = CheckStatus::kPass;
  std::string
      subject_kind;     // run | phase | node | nodes | field | rank | ranks | link | scope | shape
  std::string subject;  // "rank 2", "node 1", "world all_reduce", "ffn_up"...
  double value = std::numeric_limits<double>::quiet_NaN();     // what was measured
  double expected = std::numeric_limits<double>::quiet_NaN();  // what it was held to
  std::string unit;      // of value and expected: "GB/s", "TFLOP/s", "us", "fraction"...
  std::string evidence;  // how sure: "in 4 of 4 shapes, p < 1e-4", "5 iterations"
  std::string message;   // one line a person can act on; names rank, host and node
  // Where to act when the check fails: the host to drain ("" when no one node is to blame).
  std::string host;
  int node = -1;
  int rank = -1;
  int corruption = 0;  // 1: wrong data was found (the verdict is DATA CORRUPTION, exit 3)
};

// The /analysis attributes: the verdict as the run computed it.
struct AnalysisRecord {
  std::string verdict;  // the headline: "PASS ...", "FAIL: ...", "DATA CORRUPTION: ..."
  int exit_code = 0;
  std::string tested;  // "48 sweeps (720 sizes), 4 GEMM shapes on 4 ranks / 2 nodes"
  int passed = 0, warned = 0, failed = 0, skipped = 0;  // checks, by their worst finding
  std::vector<Finding> findings;
};

}  // namespace shakedown
