#include "analysis/verdict.hpp"

#include <algorithm>
#include <map>

#include "analysis/audit.hpp"
#include "analysis/checks.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

int severity(CheckStatus s) {
  switch (s) {
    case CheckStatus::kFail:
      return 3;
    case CheckStatus::kWarn:
      return 2;
    case CheckStatus::kPass:
      return 1;
    case CheckStatus::kSkip:
      return 0;
  }
  return 0;
}

// "48 sweeps (720 sizes), 4 GEMM shapes on 4 ranks / 2 nodes (virtual)".
std::string tested_text(const RunAnalysis& a) {
  std::vector<std::string> parts;
  std::size_t sweeps = 0, sizes = 0;
  for (const SweepData& s : a.collectives.sweeps) {
    if (s.measured() == 0) continue;
    ++sweeps;
    sizes += s.measured();
  }
  if (a.devices.ran) {
    const std::size_t pairs = a.devices.pairs_measured;
    parts.push_back(plural(a.devices.world, "device", "devices") +
                    (pairs > 0 ? " and " + plural(pairs, "pair", "pairs") : ""));
  }
  if (a.linkscan.ran && a.linkscan.pairs_tested > 0) {
    parts.push_back(plural(a.linkscan.pairs_tested, "node pair", "node pairs"));
  }
  if (a.collectives.ran) {
    parts.push_back(plural(sweeps, "sweep", "sweeps") + " (" + plural(sizes, "size", "sizes") +
                    ")");
  }
  if (a.gemm.ran) parts.push_back(plural(a.gemm.measured, "GEMM shape", "GEMM shapes"));
  if (a.train.ran)
    parts.push_back(plural(a.train.summary.steps, "training step", "training steps"));
  if (a.checkpoint.ran) {
    parts.push_back(plural(a.checkpoint.summary.iters, "checkpoint", "checkpoints") + " of " +
                    plural(a.checkpoint.summary.world, "shard", "shards"));
  }
  if (parts.empty() && a.facts.asked_for("inventory")) {
    parts.push_back("the set-up of every node (an audit: no measurement)");
  }
  if (parts.empty()) parts.push_back("no measurement");
  const RunMeta& m = a.facts.meta;
  return join(parts, ", ") + " on " +
         plural(static_cast<std::size_t>(m.world_size), "rank", "ranks") + " / " +
         plural(static_cast<std::size_t>(m.node_count), "node", "nodes") +
         (m.virtual_nodes > 0 ? " (virtual)" : "");
}

Verdict decide(const RunFile& file, const RunAnalysis& a, std::vector<Finding> findings) {
  Verdict v;
  v.findings = std::move(findings);
  v.tested = tested_text(a);
  const auto groups = group_checks(v.findings);
  std::vector<std::string> failed, warned;
  for (const CheckGroup& g : groups) {
    switch (g.status) {
      case CheckStatus::kFail:
        ++v.failed;
        failed.push_back(g.check);
        break;
      case CheckStatus::kWarn:
        ++v.warned;
        warned.push_back(g.check);
        break;
      case CheckStatus::kPass:
        ++v.passed;
        break;
      case CheckStatus::kSkip:
        ++v.skipped;
        break;
    }
  }
  // Each check and place once, with how many findings it has (one rank's wrong GEMM output in
  // seven shapes is one line, not seven).
  std::vector<std::pair<std::string, int>> corrupt_places;
  for (const Finding& f : v.findings) {
    if (f.corruption == 0 || f.status != CheckStatus::kFail) continue;
    const std::string place =
        f.check + " on " + (f.rank >= 0 ? a.facts.rank_name(f.rank) : f.subject);
    const auto seen = std::find_if(corrupt_places.begin(), corrupt_places.end(),
                                   [&](const auto& p) { return p.first == place; });
    if (seen != corrupt_places.end()) {
      ++seen->second;
    } else {
      corrupt_places.emplace_back(place, 1);
    }
  }
  std::vector<std::string> corrupt;
  for (const auto& [place, n] : corrupt_places) {
    corrupt.push_back(n > 1 ? place + " (" + std::to_string(n) + " findings)" : place);
  }
  const std::string& status = a.facts.meta.status;
  if (status == schema::kStatusRunning) {
    v.code = ExitCode::kRuntime;
    v.headline =
        "INCOMPLETE: the run ended without closing its file (status running: it was killed, "
        "crashed or ran out of disk space, or it is still going); what it wrote before is shown "
        "above";
  } else if (status != schema::kStatusComplete) {
    v.code = ExitCode::kRuntime;
    std::string reason;
    if (file.has_attr("/", schema::kAttrAbortReason)) {
      reason = file.attr_string("/", schema::kAttrAbortReason);
    }
    // Aborted because wrong data was found (collectives.on_wrong: abort): corruption first, so
    // the verdict's name says what a tool filtering on it must see; the abort after it.
    v.headline = corrupt.empty()
                     ? "ABORTED (status " + status + ")" + (reason.empty() ? "" : ": " + reason)
                     : "DATA CORRUPTION: " + join_limited(corrupt, "; ", 4) + "; the run then " +
                           "aborted (status " + status + ")" +
                           (reason.empty() ? "" : ": " + reason);
  } else if (!corrupt.empty()) {
    v.code = ExitCode::kRuntime;
    v.headline = "DATA CORRUPTION: " + join_limited(corrupt, "; ", 4);
  } else if (!failed.empty()) {
    v.code = ExitCode::kCheckFailed;
    v.headline = "FAIL: " + join(failed, ", ") + "; tested " + v.tested;
  } else {
    v.headline = (warned.empty() ? std::string("PASS")
                                 : "PASS with " + plural(warned.size(), "warning", "warnings") +
                                       " (" + join(warned, ", ") + ")") +
                 "; tested " + v.tested;
  }
  return v;
}

RunAnalysis measure(const RunFile& file) {
  RunAnalysis a;
  a.facts = read_run_facts(file);
  a.devices = devices_findings(file, a.facts);
  a.linkscan = linkscan_findings(file, a.facts);
  a.collectives = read_collectives(file);
  a.gemm = gemm_findings(file, a.facts);
  a.train = train_findings(file, a.facts, a.gemm);
  a.checkpoint = checkpoint_findings(file, a.facts);
  a.telemetry = telemetry_findings(file, a.facts);
  return a;
}

}  // namespace

std::string verdict_status(const Verdict& v) {
  switch (v.code) {
    case ExitCode::kPass:
      return v.warned > 0 ? "warn" : "pass";
    case ExitCode::kCheckFailed:
      return "fail";
    case ExitCode::kRuntime:
      // decide() words the headline; a stored verdict keeps it.
      if (v.headline.starts_with("DATA CORRUPTION")) return "corruption";
      if (v.headline.starts_with("INCOMPLETE")) return "incomplete";
      if (v.headline.starts_with("ABORTED")) return "aborted";
      return "error";
    default:
      return "error";
  }
}

std::vector<CheckGroup> group_checks(const std::vector<Finding>& findings) {
  std::vector<CheckGroup> groups;
  std::map<std::string, std::size_t> index;
  for (const Finding& f : findings) {
    auto [it, fresh] = index.emplace(f.check, groups.size());
    if (fresh) groups.push_back({f.check, f.status, {}});
    CheckGroup& g = groups[it->second];
    g.findings.push_back(&f);
    if (severity(f.status) > severity(g.status)) g.status = f.status;
  }
  for (CheckGroup& g : groups) {
    std::stable_sort(g.findings.begin(), g.findings.end(), [](const Finding* x, const Finding* y) {
      return severity(x->status) > severity(y->status);
    });
  }
  std::stable_sort(groups.begin(), groups.end(), [](const CheckGroup& x, const CheckGroup& y) {
    return severity(x.status) > severity(y.status);
  });
  return groups;
}

std::vector<DrainEntry> drain_list(const std::vector<Finding>& findings) {
  std::vector<DrainEntry> out;
  for (const Finding& f : findings) {
    if (f.status != CheckStatus::kFail || f.host.empty()) continue;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const DrainEntry& e) { return e.host == f.host; });
    if (it == out.end()) {
      out.push_back({f.host, {}, f.check + ": " + f.message});
      it = out.end() - 1;
    }
    if (f.node >= 0 && std::find(it->nodes.begin(), it->nodes.end(), f.node) == it->nodes.end()) {
      it->nodes.push_back(f.node);
    }
  }
  return out;
}

std::string scontrol_drain(const DrainEntry& e) {
  // Slurm keeps the reason as given; quotes inside it would end the argument.
  std::string reason = "shakedown: " + e.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  if (reason.size() > 200) reason = reason.substr(0, 197) + "...";
  return "scontrol update NodeName=" + e.host + " State=DRAIN Reason=\"" + reason + "\"";
}

namespace {

// The phase an aborted run was in: its coverage cannot pass, whatever it recorded before the end
// (sweeps, shapes or checkpoints it did not reach are not measured).
void mark_cut_short(std::vector<Finding>& findings, const RunFacts& facts) {
  const std::string& phase = facts.meta.abort_phase;
  if (phase.empty()) return;
  const std::string check = phase + ".coverage";
  bool found = false;
  for (Finding& f : findings) {
    if (f.check != check) continue;
    found = true;
    if (f.status == CheckStatus::kFail) continue;
    f.status = CheckStatus::kFail;
    f.message =
        "cut short: the run ended in the " + phase + " phase; recorded before: " + f.message;
  }
  if (!found) {
    findings.push_back(run_finding(check, CheckStatus::kFail,
                                   "cut short: the run ended in the " + phase + " phase"));
  }
}

}  // namespace

RunAnalysis analyze(const RunFile& file) {
  RunAnalysis a = measure(file);
  std::vector<Finding> findings = placement_checks(a.facts);
  for (auto&& part :
       {run_checks(a.facts, a.collectives), inventory_checks(file, a.facts),
        audit_checks(file, a.facts), a.devices.findings, a.linkscan.findings,
        collectives_checks(file, a.facts, a.collectives), platform_checks(a.facts, a.collectives),
        a.gemm.findings, a.train.findings, a.checkpoint.findings, a.telemetry.findings}) {
    findings.insert(findings.end(), part.begin(), part.end());
  }
  attach_throttling(findings, a.telemetry, a.facts);
  mark_cut_short(findings, a.facts);
  a.verdict = decide(file, a, std::move(findings));
  return a;
}

RunAnalysis analyze_stored(const RunFile& file) {
  std::optional<AnalysisRecord> stored = file.analysis();
  if (!stored) return analyze(file);
  RunAnalysis a = measure(file);
  Verdict& v = a.verdict;
  v.findings = std::move(stored->findings);
  v.headline = stored->verdict;
  v.code = static_cast<ExitCode>(stored->exit_code);
  v.tested = stored->tested;
  v.passed = stored->passed;
  v.warned = stored->warned;
  v.failed = stored->failed;
  v.skipped = stored->skipped;
  v.stored = true;
  return a;
}

AnalysisRecord to_record(const Verdict& v) {
  AnalysisRecord r;
  r.verdict = v.headline;
  r.exit_code = static_cast<int>(v.code);
  r.tested = v.tested;
  r.passed = v.passed;
  r.warned = v.warned;
  r.failed = v.failed;
  r.skipped = v.skipped;
  r.findings = v.findings;
  return r;
}

}  // namespace shakedown
