#include "analysis/summary.hpp"

#include <sstream>

#include "analysis/collectives_report.hpp"
#include "analysis/gemm_report.hpp"
#include "analysis/reporters/text.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

Verdict compute_verdict(const RunFile& file) {
  Verdict v;
  std::vector<CheckResult> checks = file.placement_checks();
  v.gemm = gemm_findings(file);
  const GemmFindings& gemm = v.gemm;
  checks.insert(checks.end(), gemm.checks.begin(), gemm.checks.end());
  for (const auto& c : checks) {
    if (c.status == CheckStatus::kFail) v.failed.push_back(c);
    if (c.status == CheckStatus::kWarn) v.warned.push_back(c);
  }
  const RunMeta meta = file.meta();
  if (meta.status == schema::kStatusRunning) {
    v.code = ExitCode::kRuntime;
    v.headline =
        "INCOMPLETE: the run ended without closing its file (status running: it was killed, "
        "crashed or ran out of disk space, or it is still going); what it wrote before is shown "
        "above";
  } else if (meta.status != schema::kStatusComplete) {
    v.code = ExitCode::kRuntime;
    std::string reason;
    if (file.has_attr("/", schema::kAttrAbortReason)) {
      reason = file.attr_string("/", schema::kAttrAbortReason);
    }
    v.headline = "ABORTED (status " + meta.status + ")" + (reason.empty() ? "" : ": " + reason);
  } else if (const std::uint64_t wrong = collectives_wrong(file); wrong > 0 || gemm.corrupt) {
    v.code = ExitCode::kRuntime;
    std::vector<std::string> parts;
    if (wrong > 0) {
      parts.push_back(std::to_string(wrong) +
                      " wrong elements in the collectives (see the #wrong columns)");
    }
    for (const auto& c : gemm.checks) {
      if (c.status == CheckStatus::kFail) parts.push_back(c.name + ": " + c.reason);
    }
    v.headline = "DATA CORRUPTION: " + join(parts, "; ");
  } else if (!v.failed.empty()) {
    v.code = ExitCode::kCheckFailed;
    v.headline = "FAIL:";
    for (std::size_t i = 0; i < v.failed.size(); ++i) {
      v.headline += (i ? ", " : " ") + v.failed[i].name;
    }
  } else {
    v.headline =
        v.warned.empty() ? "PASS" : "PASS with " + std::to_string(v.warned.size()) + " warning(s)";
  }
  return v;
}

std::string format_summary(const RunFile& file, const Verdict& verdict) {
  std::ostringstream os;
  os << "shakedown run " << file.path().string() << '\n';
  os << format_run_meta(file.meta());
  os << "\ntopology\n" << format_topology_table(file.ranks());
  os << "\nplacement checks\n" << format_checks(file.placement_checks());
  auto nodes = file.inventory();
  if (!nodes.empty()) os << "\ninventory\n" << format_inventory(nodes);
  os << "\nclock\n" << format_clock(file.clock_offsets_us(), file.clock_rtt_us());
  if (std::string c = format_collectives(file); !c.empty()) os << "\ncollectives\n" << c;
  if (std::string g = format_gemm(verdict.gemm); !g.empty()) os << "\ngemm\n" << g;
  // The checks beyond placement (placement is listed above, next to the topology).
  if (!verdict.gemm.checks.empty()) os << "\nchecks\n" << format_checks(verdict.gemm.checks);
  os << "\nverdict: " << verdict.headline << " (exit " << static_cast<int>(verdict.code) << ")\n";
  return os.str();
}

}  // namespace shakedown
