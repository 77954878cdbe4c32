#include "analysis/reporters/summary_text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "analysis/collectives_report.hpp"
#include "analysis/number_text.hpp"
#include "analysis/reporters/text.hpp"
#include "config/load.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

std::string bw_text(double v) {
  if (std::isnan(v)) return "-";
  return fixed_text(v, v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3);
}

// A cell of aligned text.
std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// Rails are one row per collective: the spread over rails, naming the slowest.
std::string scope_group(const std::string& scope) {
  return scope.starts_with("rail_") ? "rails" : scope;
}

// One cell of the headline: one scope (or all rails) x one collective, out of place where run.
struct Cell {
  int nranks = 0;
  double busbw =
      std::numeric_limits<double>::quiet_NaN();  // at the largest size (rails: the slowest)
  std::string slowest_rail;
  double latency = std::numeric_limits<double>::quiet_NaN();  // median time at the smallest size
  std::uint64_t largest = 0;
  std::int64_t wrong = 0;
  std::string mode;  // the mode shown
  bool unsupported = false, measured = false;
};

// `collapse_audit`: the audit's passed checks share one line (a run that measured something: its
// summary must stay one screen); `shakedown audit` lists each with what it covered.
void format_checks_block(const Verdict& v, bool detail, bool collapse_audit,
                         std::ostringstream& os) {
  const auto groups = group_checks(v.findings);
  std::vector<std::string> skipped, not_run, audit_passed;
  // Passed checks of these families share one line, with their coverage finding's message.
  struct Collapsed {
    std::string family;  // "devices"
    std::vector<std::string> passed;
    std::string coverage;
  };
  std::vector<Collapsed> collapsed = {{"devices", {}, {}}, {"telemetry", {}, {}}};
  for (const CheckGroup& g : groups) {
    if (g.status == CheckStatus::kSkip && !detail) {
      // A phase the run never reached (it ended before) is not "not applicable".
      const bool never_ran =
          !g.findings.empty() && g.findings.front()->message.starts_with("not run:");
      (never_ran ? not_run : skipped).push_back(g.check);
      continue;
    }
    if (g.status == CheckStatus::kPass && collapse_audit && !detail &&
        (g.check.starts_with("audit.") || g.check == "inventory.coverage")) {
      audit_passed.push_back(g.check);
      continue;
    }
    const auto family = std::find_if(collapsed.begin(), collapsed.end(), [&](const Collapsed& c) {
      return g.check.starts_with(c.family + ".");
    });
    if (g.status == CheckStatus::kPass && collapse_audit && !detail && family != collapsed.end()) {
      family->passed.push_back(g.check.substr(family->family.size() + 1));
      if (g.check == family->family + ".coverage") {
        // The folded line keeps what was covered; what was not is counted (--detail lists it).
        std::string c = g.findings.front()->message;
        if (const auto cut = c.find("; not sampled: "); cut != std::string::npos) {
          const auto n =
              1 + std::count(c.begin() + static_cast<std::ptrdiff_t>(cut) + 15, c.end(), ';');
          c = c.substr(0, cut) + "; " + std::to_string(n) + " source(s) not sampled";
        }
        family->coverage = c;
      }
      continue;
    }
    const Finding& first = *g.findings.front();
    os << "  [" << status_label(g.status) << "] " << g.check;
    if (!first.message.empty()) os << ": " << first.message;
    // The other findings of a failed check (up to 3), each naming its rank / node / shape; a
    // warned check keeps to its line, counting the rest (on shared cores the noise warns often,
    // and the summary must stay one screen).
    std::vector<const Finding*> others;
    for (std::size_t i = 1; i < g.findings.size(); ++i) {
      const Finding& f = *g.findings[i];
      if (detail || (f.status != CheckStatus::kPass && f.status != CheckStatus::kSkip)) {
        others.push_back(&f);
      }
    }
    const std::size_t shown = detail ? others.size()
                              : g.status == CheckStatus::kFail
                                  ? std::min<std::size_t>(3, others.size())
                                  : 0;
    if (shown == 0 && !others.empty()) {
      os << " (and " << others.size() << " more: shakedown summary --detail lists them)";
    }
    os << '\n';
    for (std::size_t i = 0; i < shown; ++i) os << "         " << others[i]->message << '\n';
    if (shown > 0 && others.size() > shown) {
      os << "         ... and " << others.size() - shown
         << " more (shakedown summary --detail lists them)\n";
    }
  }
  if (!audit_passed.empty()) {
    // "inventory.coverage, audit: compatibility, drift, ..."
    std::vector<std::string> names, audit;
    for (const std::string& c : audit_passed) {
      (c.starts_with("audit.") ? audit : names)
          .push_back(c.starts_with("audit.") ? c.substr(6) : c);
    }
    if (!audit.empty()) names.push_back("audit: " + join(audit, ", "));
    os << "  [PASS] " << join(names, ", ")
       << " (the nodes' set-up; --detail says what each covered)\n";
  }
  for (const Collapsed& c : collapsed) {
    if (c.passed.empty()) continue;
    // "devices: coverage, memory (host tests copy, triad on 4 device(s), ...)"
    os << "  [PASS] " << c.family << ": " << join(c.passed, ", ") << " ("
       << (c.coverage.empty() ? "" : c.coverage + "; ") << "--detail says what each covered)\n";
  }
  if (!not_run.empty()) {
    os << "  [SKIP] " << join(not_run, ", ") << " (not run: the run ended before "
       << (not_run.size() == 1 ? "its phase" : "their phases") << ")\n";
  }
  if (!skipped.empty()) {
    os << "  [SKIP] " << join(skipped, ", ") << " (not applicable here; --detail says why)\n";
  }
}

}  // namespace

std::string format_collectives_headline(const CollectivesData& data) {
  if (!data.ran) return "";
  // The first dtype/reduction of each collective, out of place when that ran.
  std::vector<std::string> scopes, ops;
  std::map<std::string, std::string> leaf_of_op;
  std::map<std::pair<std::string, std::string>, Cell> cells;
  std::set<std::string> rails;
  auto add_unique = [](std::vector<std::string>& v, const std::string& x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  for (const SweepData& s : data.sweeps) {
    if (!leaf_of_op.contains(s.op)) leaf_of_op[s.op] = s.leaf;
    if (leaf_of_op[s.op] != s.leaf) continue;
    const std::string scope = scope_group(s.scope);
    if (s.scope.starts_with("rail_")) rails.insert(s.scope);
    add_unique(scopes, scope);
    add_unique(ops, s.op);
    Cell& c = cells[{scope, s.op}];
    c.nranks = s.nranks;
    if (!s.unsupported.empty()) {
      c.unsupported = c.unsupported || !c.measured;
      continue;
    }
    for (std::int64_t w : s.wrong) c.wrong += w;
    const long big = s.largest(), small = s.smallest();
    if (big < 0) continue;
    // Out of place is the headline; in place only where out of place did not run.
    if (c.measured && c.mode != s.mode && s.mode == "in_place") continue;
    const double bw = s.busbw[static_cast<std::size_t>(big)];
    if (!c.measured || c.mode != s.mode || bw < c.busbw) {
      c.busbw = bw;
      c.slowest_rail = s.scope;
      c.largest = s.sizes[static_cast<std::size_t>(big)];
      if (small >= 0) c.latency = s.time_med_us[static_cast<std::size_t>(small)];
    }
    c.mode = s.mode;
    c.measured = true;
    c.unsupported = false;
  }
  // The order of the configuration's scopes: widest first.
  auto order = [](const std::string& scope) {
    return scope == "world" ? 0 : scope == "intra_node" ? 1 : scope == "inter_node" ? 2 : 3;
  };
  std::stable_sort(scopes.begin(), scopes.end(),
                   [&](const std::string& x, const std::string& y) { return order(x) < order(y); });
  std::uint64_t common = 0;
  for (const auto& [k, c] : cells) common = std::max(common, c.largest);
  std::string leaves;
  for (const auto& op : ops) {
    if (leaves.find(leaf_of_op[op]) == std::string::npos) {
      leaves += (leaves.empty() ? "" : ", ") + leaf_of_op[op];
    }
  }
  std::ostringstream os;
  if (common == 0) {
    for (const auto& u : data.unreadable) os << "  unreadable: " << u << '\n';
    os << "  nothing measured: every size was skipped (see collectives.coverage; --detail lists "
          "the sizes)\n";
    return os.str();
  }
  os << "  busbw GB/s at " << format_size(common) << " | latency us at the smallest size; "
     << data.backend << ", " << leaves << ", out of place (--detail: every size and mode)\n";
  const std::size_t width = 17;
  os << "  " << pad("collective", 16);
  for (const auto& scope : scopes) {
    int n = 0;
    for (const auto& op : ops) n = std::max(n, cells[{scope, op}].nranks);
    std::string head = scope == "rails"
                           ? std::to_string(rails.size()) + " rails x " + std::to_string(n)
                           : scope + " x " + std::to_string(n);
    os << pad(head, scope == "rails" ? width + 7 : width);
  }
  os << '\n';
  bool smaller = false, wrong = false;
  for (const auto& op : ops) {
    os << "  " << pad(op, 16);
    for (const auto& scope : scopes) {
      const Cell& c = cells[{scope, op}];
      std::string text;
      if (c.measured) {
        text = bw_text(c.busbw) + " | " + fixed_text(c.latency, 1);
        if (c.largest < common) {
          text += "*";
          smaller = true;
        }
        if (c.wrong > 0) {
          text += "!";
          wrong = true;
        }
        if (scope == "rails" && rails.size() > 1) text += " " + c.slowest_rail;
      } else {
        text = c.unsupported ? "unsupported" : c.nranks > 0 ? "skipped" : "-";
      }
      os << pad(text, scope == "rails" ? width + 7 : width);
    }
    os << '\n';
  }
  if (rails.size() > 1) os << "  rails: the slowest rail's busbw, and which rail\n";
  if (smaller) os << "  *: a smaller largest size (the bigger ones were skipped)\n";
  if (wrong) os << "  !: wrong elements found (see collectives.wrong_data)\n";
  for (const auto& u : data.unreadable) os << "  unreadable: " << u << '\n';
  if (!data.skipped_scopes.empty()) {
    std::vector<std::string> parts;
    for (const auto& [scope, why] : data.skipped_scopes) parts.push_back(scope + ": " + why);
    os << "  not run: " << join(parts, "; ") << '\n';
  }
  return os.str();
}

std::string format_summary(const RunFile& file, const RunAnalysis& a, bool detail) {
  std::ostringstream os;
  const Verdict& v = a.verdict;
  // The subcommand that wrote it (its command line's second word): `audit` or `run`.
  const std::string& command = a.facts.meta.command_line;
  const auto first_space = command.find(' ');
  const bool audit = first_space != std::string::npos &&
                     command.substr(first_space + 1, command.find(' ', first_space + 1) -
                                                         first_space - 1) == "audit";
  os << (audit ? "shakedown audit " : "shakedown run ") << file.path().string() << '\n';
  os << format_run_meta(a.facts.meta);
  os << "\ntopology\n"
     << (detail ? format_topology_table(a.facts.ranks) : format_topology_compact(a.facts.ranks));
  if (detail) os << "\nplacement checks\n" << format_checks(a.facts.placement);
  if (auto nodes = file.inventory(); !nodes.empty()) {
    if (detail) {
      os << "\ninventory\n" << format_inventory(nodes);
    } else {
      const std::string inv = format_inventory_compact(nodes);
      // One kind of node fits on the line; several (drift between nodes) get a block.
      os << (std::count(inv.begin(), inv.end(), '\n') == 1 ? "\ninventory:" + inv.substr(1)
                                                           : "\ninventory\n" + inv);
    }
  }
  os << "clock:" << format_clock(file.clock_offsets_us(), file.clock_rtt_us()).substr(1);
  if (detail) os << format_telemetry(a.telemetry);  // compact: telemetry.coverage says it
  if (std::string t = format_devices(a.devices, a.facts, detail); !t.empty()) {
    os << '\n' << devices_title(a.devices) << '\n' << t;
  }
  if (std::string t = format_linkscan(a.linkscan, a.facts, detail); !t.empty()) {
    os << '\n' << linkscan_title(a.linkscan) << '\n' << t;
  }
  if (a.collectives.ran) {
    os << "\ncollectives\n"
       << (detail ? format_collectives(a.collectives) : format_collectives_headline(a.collectives));
  }
  if (std::string g = format_gemm(a.gemm, detail); !g.empty()) {
    os << "\ngemm (engine " << a.gemm.engine << "; TFLOP/s over ranks' median iterations)\n" << g;
  }
  if (std::string t = format_train(a.train, a.facts, detail); !t.empty()) {
    os << '\n' << train_title(a.train) << '\n' << t;
  }
  if (std::string t = format_checkpoint(a.checkpoint, a.facts, detail); !t.empty()) {
    os << '\n' << checkpoint_title(a.checkpoint) << '\n' << t;
  }
  os << "\nchecks" << (v.stored ? "" : " (recomputed from the measurements)") << '\n';
  const bool measured = std::any_of(a.facts.config.phases.begin(), a.facts.config.phases.end(),
                                    [](const std::string& p) { return p != "inventory"; });
  format_checks_block(v, detail, measured, os);
  if (const auto drain = drain_list(v.findings); !drain.empty()) {
    os << "\ndrain (failed checks attributable to one node; printed, not run"
       << (a.facts.meta.virtual_nodes > 0 ? "; virtual nodes: these name the host they share" : "")
       << ")\n";
    for (const DrainEntry& e : drain) os << "  " << scontrol_drain(e) << '\n';
  }
  os << "\nverdict: " << v.headline << " (exit " << static_cast<int>(v.code) << ")\n";
  return os.str();
}

}  // namespace shakedown
