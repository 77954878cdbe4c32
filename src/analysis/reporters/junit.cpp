// JUnit XML: one testcase per finding (classname = the check's phase, name = check and subject),
// so a CI system shows each failed check, rank or link as a failed test. WARN findings pass and
// say so in system-out and a property; SKIP findings are skipped; an aborted or incomplete run
// adds an error testcase "run.status".
#include <cmath>
#include <map>
#include <sstream>

#include "analysis/reporters/formats.hpp"
#include "core/strings.hpp"

namespace shakedown {

namespace {

// Text for an attribute or element: UTF-8 (invalid bytes as '?'), the five XML escapes, and
// control characters (not allowed in XML 1.0) as '?'.
struct Suite {
  std::vector<const Finding*> cases;
  int failures = 0, skipped = 0;
};

std::string details(const Finding& f) {
  std::string d = f.message;
  if (!f.evidence.empty()) d += "\nevidence: " + f.evidence;
  if (std::isfinite(f.value)) {
    d += "\nvalue: " + std::to_string(f.value) + (f.unit.empty() ? "" : " " + f.unit);
  }
  if (std::isfinite(f.expected)) {
    d += "\nexpected: " + std::to_string(f.expected) + (f.unit.empty() ? "" : " " + f.unit);
  }
  if (!f.host.empty()) d += "\nhost: " + f.host;
  return d;
}

// The check, and its subject where it is one rank, node, scope or shape.
std::string case_name(const Finding& f) {
  const bool whole = f.subject.empty() || f.subject_kind == "run" || f.subject_kind == "phase";
  return whole ? f.check : f.check + " " + f.subject;
}

}  // namespace

std::string format_junit(const RunFile& file, const RunAnalysis& a) {
  const Verdict& v = a.verdict;
  std::vector<std::string> order;
  std::map<std::string, Suite> suites;
  for (const Finding& f : v.findings) {
    const std::string phase = f.check.substr(0, f.check.find('.'));
    if (!suites.contains(phase)) order.push_back(phase);
    Suite& s = suites[phase];
    s.cases.push_back(&f);
    s.failures += f.status == CheckStatus::kFail ? 1 : 0;
    s.skipped += f.status == CheckStatus::kSkip ? 1 : 0;
  }
  const std::string status = verdict_status(v);
  const bool ended_badly = status == "aborted" || status == "incomplete" || status == "error";
  int tests = ended_badly ? 1 : 0, failures = 0, skipped = 0;
  for (const auto& [name, s] : suites) {
    tests += static_cast<int>(s.cases.size());
    failures += s.failures;
    skipped += s.skipped;
  }
  std::string stamp = a.facts.meta.started_utc;
  if (stamp.ends_with("Z")) stamp.pop_back();  // JUnit's timestamp has no zone (it is UTC here)

  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"shakedown\" tests=\"" << tests << "\" failures=\"" << failures
     << "\" errors=\"" << (ended_badly ? 1 : 0) << "\" skipped=\"" << skipped << "\">\n";
  auto properties = [&] {
    os << "    <properties>\n";
    const std::pair<const char*, std::string> props[] = {
        {"file", file.path().string()},
        {"shakedown_version", a.facts.meta.shakedown_version},
        {"verdict", status},
        {"exit_code", std::to_string(static_cast<int>(v.code))},
        {"headline", v.headline},
        {"tested", v.tested},
        {"ranks", std::to_string(a.facts.meta.world_size)},
        {"nodes", std::to_string(a.facts.meta.node_count)},
        {"platform", a.facts.platform ? a.facts.platform->name : "none"}};
    for (const auto& [k, val] : props) {
      os << "      <property name=\"" << k << "\" value=\"" << markup_escape(val) << "\"/>\n";
    }
    os << "    </properties>\n";
  };
  if (ended_badly) {
    os << "  <testsuite name=\"run\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" "
          "timestamp=\""
       << markup_escape(stamp) << "\">\n";
    properties();
    os << "    <testcase classname=\"run\" name=\"run.status\">\n      <error message=\""
       << markup_escape(v.headline) << "\" type=\"" << status << "\">" << markup_escape(v.headline)
       << "</error>\n    </testcase>\n  </testsuite>\n";
  }
  bool first = !ended_badly;
  for (const std::string& phase : order) {
    const Suite& s = suites[phase];
    os << "  <testsuite name=\"" << markup_escape(phase) << "\" tests=\"" << s.cases.size()
       << "\" failures=\"" << s.failures << "\" errors=\"0\" skipped=\"" << s.skipped
       << "\" timestamp=\"" << markup_escape(stamp) << "\">\n";
    if (first) properties();
    first = false;
    for (const Finding* f : s.cases) {
      os << "    <testcase classname=\"" << markup_escape(phase) << "\" name=\""
         << markup_escape(case_name(*f)) << "\"";
      switch (f->status) {
        case CheckStatus::kPass:
          os << "/>\n";
          break;
        case CheckStatus::kWarn:
          os << ">\n      <properties><property name=\"status\" value=\"warn\"/></properties>\n"
             << "      <system-out>WARN: " << markup_escape(details(*f))
             << "</system-out>\n    </testcase>\n";
          break;
        case CheckStatus::kFail:
          os << ">\n      <failure message=\"" << markup_escape(f->message) << "\" type=\""
             << (f->corruption != 0 ? "corruption" : "fail") << "\">" << markup_escape(details(*f))
             << "</failure>\n    </testcase>\n";
          break;
        case CheckStatus::kSkip:
          os << ">\n      <skipped message=\"" << markup_escape(f->message)
             << "\"/>\n    </testcase>\n";
          break;
      }
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}

std::string format_compare_junit(const Comparison& c) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CompareGroup*>> suites;
  for (const CompareGroup& g : c.groups) {
    if (!suites.contains(g.phase)) order.push_back(g.phase);
    suites[g.phase].push_back(&g);
  }
  // The verdict is a test case of its own, first, with the comparison's properties: a
  // comparison that judged nothing (or regressed) is never an empty, passing suite to a CI.
  const bool regressed = c.regressed(), skipped = !regressed && c.nothing_judged();
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"shakedown compare\" tests=\"" << c.groups.size() + 1 << "\" failures=\""
     << c.slower_groups + (regressed ? 1 : 0) << "\" errors=\"0\" skipped=\"" << (skipped ? 1 : 0)
     << "\">\n";
  os << "  <testsuite name=\"compare.verdict\" tests=\"1\" failures=\"" << (regressed ? 1 : 0)
     << "\" errors=\"0\" skipped=\"" << (skipped ? 1 : 0) << "\">\n";
  os << "    <properties>\n";
  const std::pair<const char*, std::string> props[] = {
      {"before", c.before_path},
      {"after", c.after_path},
      {"verdict", c.verdict_name()},
      {"exit_code", std::to_string(c.exit_code())},
      {"alpha", std::to_string(c.alpha)},
      {"correction", "bonferroni"},
      {"min_effect", std::to_string(c.min_effect)},
      {"judged", std::to_string(c.judged)},
      {"not_judged", std::to_string(c.not_judged)}};
  for (const auto& [k, val] : props) {
    os << "      <property name=\"" << k << "\" value=\"" << markup_escape(val) << "\"/>\n";
  }
  for (const std::string& w : c.warnings) {
    os << "      <property name=\"warning\" value=\"" << markup_escape(w) << "\"/>\n";
  }
  os << "    </properties>\n";
  const std::string summary = std::string(c.verdict_words()) + ": " + std::to_string(c.judged) +
                              " item(s) judged, " + std::to_string(c.not_judged) + " not judged, " +
                              std::to_string(c.slower_groups) + " place(s) slower";
  os << "    <testcase classname=\"compare.verdict\" name=\"verdict\"";
  if (regressed) {
    os << ">\n      <failure message=\"" << markup_escape(summary) << "\" type=\"regression\">"
       << markup_escape(summary) << "</failure>\n    </testcase>\n";
  } else if (skipped) {
    os << ">\n      <skipped message=\"" << markup_escape(summary) << "\"/>\n    </testcase>\n";
  } else {
    os << ">\n      <system-out>" << markup_escape(summary) << "</system-out>\n    </testcase>\n";
  }
  os << "  </testsuite>\n";
  for (const std::string& phase : order) {
    const auto& list = suites[phase];
    std::size_t failures = 0;
    for (const CompareGroup* g : list) failures += g->result == CompareGroup::Result::kSlower;
    os << "  <testsuite name=\"compare." << markup_escape(phase) << "\" tests=\"" << list.size()
       << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\">\n";
    for (const CompareGroup* g : list) {
      os << "    <testcase classname=\"compare." << markup_escape(phase) << "\" name=\""
         << markup_escape(g->name) << "\"";
      if (g->result == CompareGroup::Result::kSlower) {
        os << ">\n      <failure message=\"" << markup_escape(g->line) << "\" type=\"regression\">"
           << markup_escape(g->line) << "</failure>\n    </testcase>\n";
      } else if (g->result == CompareGroup::Result::kFaster) {
        os << ">\n      <system-out>" << markup_escape(g->line)
           << "</system-out>\n    </testcase>\n";
      } else {
        os << "/>\n";
      }
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}

}  // namespace shakedown
