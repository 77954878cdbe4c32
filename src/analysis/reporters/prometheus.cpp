// The Prometheus text format, for node_exporter's textfile collector (write it with -o into the
// collector's directory: the file is renamed into place whole). Series and their labels are
// listed in docs/reports.md. No sample carries a timestamp (the textfile collector refuses them);
// the run's start and end are gauges of their own.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include "analysis/reporters/formats.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

// A label value: UTF-8 (invalid bytes as '?'), backslash, double quote and newline escaped.
std::string label(const std::string& raw) {
  const std::string s = valid_utf8(raw);
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  void family(const std::string& name, const std::string& help) {
    name_ = name;
    os_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n";
  }
  void sample(const Labels& labels, double value) {
    os_ << name_;
    if (!labels.empty()) {
      os_ << '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        os_ << (i ? "," : "") << labels[i].first << "=\"" << label(labels[i].second) << '"';
      }
      os_ << '}';
    }
    os_ << ' ' << value_text(value) << '\n';
  }
  std::string str() const { return os_.str(); }

 private:
  static std::string value_text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[40];
    // Whole numbers (counts, Unix times) in full; others to 10 significant digits.
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.10g", v);
    }
    return buf;
  }
  std::ostringstream os_;
  std::string name_;
};

// "2026-12-02T04:38:27Z" as seconds since the epoch; NaN when it does not parse.
double epoch_seconds(const std::string& iso) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6 ||
      y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || h < 0 ||
      mi < 0 || s < 0) {
    return kNaN;  // a damaged file's text: no time rather than a wrong one
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<double>(timegm(&tm));
}

// 0 pass, 1 warn, 2 fail, -1 skipped (not applicable): `shakedown_check_status > 1` alerts.
double status_value(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return 0;
    case CheckStatus::kWarn:
      return 1;
    case CheckStatus::kFail:
      return 2;
    case CheckStatus::kSkip:
      return -1;
  }
  return -1;
}

}  // namespace

std::string format_prometheus(const RunFile& file, const RunAnalysis& a) {
  const RunMeta& m = a.facts.meta;
  const Verdict& v = a.verdict;
  Exposition e;
  e.family("shakedown_run_info", "The run this file describes (value 1).");
  e.sample({{"version", m.shakedown_version},
            {"schema_version", std::to_string(m.schema_version)},
            {"status", m.status},
            {"backend", m.backend},
            {"platform", a.facts.platform ? a.facts.platform->name : "none"},
            {"ranks", std::to_string(m.world_size)},
            {"nodes", std::to_string(m.node_count)},
            {"file", file.path().string()}},
           1);
  e.family("shakedown_run_started_timestamp_seconds", "When the run started (Unix time).");
  e.sample({}, epoch_seconds(m.started_utc));
  if (!m.finished_utc.empty()) {
    e.family("shakedown_run_finished_timestamp_seconds", "When the run ended (Unix time).");
    e.sample({}, epoch_seconds(m.finished_utc));
  }
  e.family("shakedown_verdict_exit_code",
           "The run's exit code: 0 pass, 1 a check failed, 3 aborted or data corruption.");
  e.sample({{"status", verdict_status(v)}}, static_cast<double>(static_cast<int>(v.code)));
  e.family("shakedown_checks", "Checks by their worst finding.");
  e.sample({{"status", "pass"}}, v.passed);
  e.sample({{"status", "warn"}}, v.warned);
  e.sample({{"status", "fail"}}, v.failed);
  e.sample({{"status", "skip"}}, v.skipped);

  // One series per check and subject, the worst finding where one repeats.
  e.family("shakedown_check_status",
           "Each check per subject: 0 pass, 1 warn, 2 fail, -1 skipped (not applicable).");
  std::map<std::pair<std::string, std::string>, const Finding*> worst;
  std::vector<std::pair<std::string, std::string>> order;
  for (const Finding& f : v.findings) {
    auto key = std::make_pair(f.check, f.subject);
    auto [it, fresh] = worst.emplace(key, &f);
    if (fresh) {
      order.push_back(key);
    } else if (status_value(f.status) > status_value(it->second->status)) {
      it->second = &f;
    }
  }
  for (const auto& key : order) {
    const Finding& f = *worst[key];
    Labels l{{"check", f.check}, {"subject", f.subject}};
    if (!f.host.empty()) l.emplace_back("host", f.host);
    e.sample(l, status_value(f.status));
  }

  if (a.collectives.ran) {
    e.family("shakedown_busbw_gbps",
             "Bus bandwidth of the median iteration (GB/s, 1e9 bytes/s) per scope, collective, "
             "dtype, mode and message size; node=\"all\" for the whole scope, else one node's "
             "own ranks (intra_node, at the largest size).");
    for (const SweepData& s : a.collectives.sweeps) {
      Labels base{{"scope", s.scope}, {"op", s.op}, {"dtype", s.leaf}, {"mode", s.mode}};
      for (std::size_t i = 0; i < s.sizes.size(); ++i) {
        if (s.skipped[i] != schema::kSkipMeasured || !std::isfinite(s.busbw[i])) continue;
        Labels l = base;
        l.emplace_back("size", std::to_string(s.sizes[i]));
        l.emplace_back("node", "all");
        e.sample(l, s.busbw[i]);
      }
      if (s.scope == schema::kScopeIntraNode && s.largest() >= 0) {
        const auto big = static_cast<std::size_t>(s.largest());
        for (const auto& [node, bw] : node_busbw(file, s, big, a.facts.ranks)) {
          Labels l = base;
          l.emplace_back("size", std::to_string(s.sizes[big]));
          l.emplace_back("node", std::to_string(node));
          l.emplace_back("host", a.facts.host_of_node(node));
          e.sample(l, bw);
        }
      }
    }
  }
  if (a.gemm.ran) {
    e.family("shakedown_gemm_tflops",
             "Each rank's median GEMM iteration (TFLOP/s, 2mnk per iteration) per shape.");
    for (const GemmShapeRow& row : a.gemm.rows) {
      for (std::size_t r = 0; r < row.rank_tflops.size(); ++r) {
        if (!std::isfinite(row.rank_tflops[r])) continue;
        const int rank = static_cast<int>(r);
        e.sample({{"shape", row.name},
                  {"formats", row.formats},
                  {"rank", std::to_string(rank)},
                  {"node", std::to_string(a.facts.node_of_rank(rank))},
                  {"host", a.facts.host_of_rank(rank)}},
                 row.rank_tflops[r]);
      }
    }
  }
  return e.str();
}

std::string format_compare_prometheus(const Comparison& c) {
  Exposition e;
  const Labels files = {{"before", c.before_path}, {"after", c.after_path}};
  e.family("shakedown_compare_regressed",
           "1 when a place got slower beyond noise from before to after (the exit code's 1).");
  e.sample(files, c.slower_groups > 0 ? 1 : 0);
  e.family("shakedown_compare_items", "Items compared, by result.");
  const std::pair<const char*, std::size_t> counts[] = {
      {"slower", c.slower},
      {"faster", c.faster},
      {"unchanged", c.judged - c.slower - c.faster},
      {"not_judged", c.not_judged}};
  for (const auto& [result, n] : counts) e.sample({{"result", result}}, static_cast<double>(n));
  e.family("shakedown_compare_places", "Places (sweeps, nodes, ranks, components) by result.");
  e.sample({{"result", "slower"}}, static_cast<double>(c.slower_groups));
  e.sample({{"result", "faster"}}, static_cast<double>(c.faster_groups));
  e.sample({{"result", "unchanged"}},
           static_cast<double>(c.groups.size() - c.slower_groups - c.faster_groups));
  e.family("shakedown_compare_place_ratio",
           "After/before time ratio (median of its changed items) of each place that changed.");
  for (const CompareGroup& g : c.groups) {
    if (g.result == CompareGroup::Result::kSame) continue;
    e.sample({{"place", g.name}, {"phase", g.phase}, {"result", result_name(g.result)}}, g.ratio);
  }
  return e.str();
}

}  // namespace shakedown
