#pragma once
// The end-of-run summary as text: what `run` prints and `summary RUN.h5` prints again. Compact
// by default (one screen: header, topology, one line per scope x collective and per GEMM shape,
// the checks with failed and warned first, the drain list, the verdict last); `detail` adds the
// per-size tables, the full inventory and every finding.
#include <string>

#include "analysis/verdict.hpp"
#include "record/reader.hpp"

namespace shakedown {

std::string format_summary(const RunFile& file, const RunAnalysis& analysis, bool detail);

// One line per scope x collective: busbw at the largest size, latency at the smallest, wrong
// elements and skipped sizes ("" when the run has no collectives).
std::string format_collectives_headline(const CollectivesData& data);

}  // namespace shakedown
