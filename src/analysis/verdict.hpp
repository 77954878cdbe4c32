#pragma once
// The verdict (docs/architecture.md "Timing and the verdict"): every phase's findings, the counts
// of what was tested, the exit code and one headline. Computed from the HDF5 file alone, once at
// the end of `run` (and stored in /analysis), and recomputed identically by `summary` for files
// without /analysis.
#include <string>
#include <vector>

#include "analysis/checkpoint_report.hpp"
#include "analysis/collectives_data.hpp"
#include "analysis/devices_report.hpp"
#include "analysis/linkscan_report.hpp"
#include "analysis/gemm_report.hpp"
#include "analysis/run_facts.hpp"
#include "analysis/telemetry_report.hpp"
#include "analysis/train_report.hpp"
#include "core/error.hpp"
#include "record/findings.hpp"
#include "record/reader.hpp"

namespace shakedown {

struct Verdict {
  ExitCode code = ExitCode::kPass;
  std::string headline;  // "PASS ...", "FAIL: ...", "DATA CORRUPTION: ...", "ABORTED ..."
  std::string tested;    // what was measured, in words
  std::vector<Finding> findings;
  int passed = 0, warned = 0, failed = 0, skipped = 0;  // checks, by their worst finding
  bool stored = false;  // read from the file's /analysis rather than recomputed
};

// The verdict in one word, for machine-readable reports: pass, warn (passed with warnings), fail,
// corruption, aborted, incomplete (the file was never closed) or error.
std::string verdict_status(const Verdict& verdict);

// One check with its findings, for reporters: the worst status first.
struct CheckGroup {
  std::string check;
  CheckStatus status = CheckStatus::kPass;  // the worst of its findings
  std::vector<const Finding*> findings;     // the worst first
};
// Failed, then warned, then passed, then skipped; within a status in the order checks ran.
std::vector<CheckGroup> group_checks(const std::vector<Finding>& findings);

// A host to drain: the failed checks attributable to one node.
struct DrainEntry {
  std::string host;
  std::vector<int> nodes;  // node indices on that host (several with virtual nodes)
  std::string reason;      // "<check>: <message>" of its first failure
};
std::vector<DrainEntry> drain_list(const std::vector<Finding>& findings);
// `scontrol update NodeName=<host> State=DRAIN Reason="shakedown: ..."` (printed, never run).
std::string scontrol_drain(const DrainEntry& entry);

// Everything the reporters show, read from the file once.
struct RunAnalysis {
  RunFacts facts;
  DevicesFindings devices;
  LinkscanFindings linkscan;
  CollectivesData collectives;
  GemmFindings gemm;
  TrainFindings train;
  CheckpointFindings checkpoint;
  TelemetryFindings telemetry;
  Verdict verdict;
};

// From the measurements in the file, ignoring any stored /analysis.
RunAnalysis analyze(const RunFile& file);
// The stored verdict when the run wrote one (same findings, same headline), else analyze()'s.
RunAnalysis analyze_stored(const RunFile& file);

AnalysisRecord to_record(const Verdict& verdict);

}  // namespace shakedown
