#pragma once
// The end-of-run summary and verdict, computed from the HDF5 file alone (DESIGN.md: analysis
// reads only the file), so `shakedown summary RUN.h5` prints exactly what the run printed.
#include <string>
#include <vector>

#include "analysis/gemm_report.hpp"
#include "core/error.hpp"
#include "record/reader.hpp"

namespace shakedown {

struct Verdict {
  ExitCode code = ExitCode::kPass;
  std::vector<CheckResult> failed;  // checks that failed
  std::vector<CheckResult> warned;
  std::string headline;  // "PASS", "FAIL: placement.gpu_unique, ..." or "ABORTED: reason"
  GemmFindings gemm;     // read once here; the summary prints it
};

Verdict compute_verdict(const RunFile& file);
std::string format_summary(const RunFile& file, const Verdict& verdict);

}  // namespace shakedown
