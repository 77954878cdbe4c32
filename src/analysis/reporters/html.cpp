// The HTML report (formats.hpp format_html): one self-contained page. The C++ side writes the
// tables as HTML and every chart as a Chart.js configuration (data and options, JSON) into the
// page's data block; Chart.js (Debian's libjs-chart.js) and the report's own script
// (report.js) are inlined after it (html_assets.cpp embeds both at build time), so the file
// opens offline. Charts with more ranks than a plot has rows for show nodes instead (their worst
// rank), and groups of nodes beyond that, so a 1,024-rank run stays a few MB.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/number_text.hpp"
#include "analysis/reporters/formats.hpp"
#include "analysis/reporters/html_assets.hpp"
#include "config/load.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"

namespace shakedown {
namespace {

using PageJson = nlohmann::json;

constexpr std::size_t kMaxRows = 128;  // rows a chart shows before ranks become nodes
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char* color(std::size_t i) {
  return kPalette[i % std::size(kPalette)];
}

// A number for a chart: rounded to 4 significant digits (the page's size), null when NaN.
PageJson num(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::stod(buf);
}

// The rows a per-rank chart shows: every rank, or (beyond kMaxRows) every node, or groups of
// nodes; each rank's row index.
struct Rows {
  std::vector<std::string> labels;
  std::vector<int> of_rank;  // by rank, -1: unknown
  enum class Kind { kRank, kNode, kNodeGroup } kind = Kind::kRank;
  const char* per() const { return kind == Kind::kRank ? "rank" : "node"; }  // "GB/s per ..."
};

Rows chart_rows(const RunFacts& f, std::size_t world) {
  Rows r;
  r.of_rank.assign(world, -1);
  if (world <= kMaxRows || f.ranks.size() != world) {
    for (std::size_t i = 0; i < world; ++i) {
      r.labels.push_back("rank " + std::to_string(i));
      r.of_rank[i] = static_cast<int>(i);
    }
    return r;
  }
  int nodes = 0;
  for (const RankInfo& ri : f.ranks) nodes = std::max(nodes, ri.node_index + 1);
  const int per = static_cast<int>((static_cast<std::size_t>(nodes) + kMaxRows - 1) / kMaxRows);
  r.kind = per == 1 ? Rows::Kind::kNode : Rows::Kind::kNodeGroup;
  for (int first = 0; first < nodes; first += per) {
    const int last = std::min(nodes, first + per) - 1;
    r.labels.push_back(per == 1
                           ? "node " + std::to_string(first) + " (" + f.host_of_node(first) + ")"
                           : "nodes " + std::to_string(first) + "-" + std::to_string(last));
  }
  for (const RankInfo& ri : f.ranks) {
    if (ri.rank >= 0 && static_cast<std::size_t>(ri.rank) < world)
      r.of_rank[ri.rank] = ri.node_index / per;
  }
  return r;
}

// Per row the worst of its ranks' values (largest when `high_is_bad`, else smallest).
std::vector<double> per_row(const Rows& rows, const std::vector<double>& by_rank,
                            bool high_is_bad) {
  std::vector<double> out(rows.labels.size(), kNaN);
  for (std::size_t r = 0; r < by_rank.size() && r < rows.of_rank.size(); ++r) {
    const int row = rows.of_rank[r];
    const double v = by_rank[r];
    if (row < 0 || std::isnan(v)) continue;
    double& o = out[static_cast<std::size_t>(row)];
    if (std::isnan(o) || (high_is_bad ? v > o : v < o)) o = v;
  }
  return out;
}

std::string rows_note(const Rows& rows) {
  if (rows.kind == Rows::Kind::kRank) return "one row per rank";
  return std::string("one row per ") +
         (rows.kind == Rows::Kind::kNode ? "node" : "group of nodes") +
         ", showing its worst rank (more ranks than the chart has rows for)";
}

// Light grey to dark red for t in [0, 1].
std::string heat(double t) {
  if (std::isnan(t)) return "rgba(0,0,0,0.05)";
  t = std::clamp(t, 0.0, 1.0);
  const double from[3] = {240, 240, 240}, mid[3] = {253, 174, 97}, to[3] = {165, 0, 38};
  double c[3];
  for (int k = 0; k < 3; ++k) {
    c[k] =
        t < 0.5 ? from[k] + (mid[k] - from[k]) * t * 2 : mid[k] + (to[k] - mid[k]) * (t - 0.5) * 2;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "rgb(%d,%d,%d)", static_cast<int>(c[0]), static_cast<int>(c[1]),
                static_cast<int>(c[2]));
  return buf;
}

class Page {
 public:
  std::ostringstream html;

  // A chart: its canvas here, its configuration into the data block. `extra` holds the hints
  // report.js acts on (x_log2_bytes, heatmap).
  void chart(PageJson spec, PageJson extra = PageJson::object(), int height = 320) {
    const std::string id = "chart-" + std::to_string(charts_.size());
    extra["id"] = id;
    extra["spec"] = std::move(spec);
    charts_.push_back(std::move(extra));
    html << "<div class=\"chart\" style=\"height:" << height << "px\"><canvas id=\"" << id
         << "\" role=\"img\"></canvas></div>\n";
  }
  std::size_t charts() const { return charts_.size(); }
  std::string data() const {
    std::string s =
        PageJson{{"charts", charts_}}.dump(-1, ' ', false, PageJson::error_handler_t::replace);
    // Inside <script>, "</" would end the element: JSON allows "<\/".
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
        out += "<\\";
      } else {
        out += s[i];
      }
    }
    return out;
  }

 private:
  PageJson charts_ = PageJson::array();
};

PageJson axis_title(const std::string& text) {
  return {{"display", true}, {"text", text}};
}

// A heatmap as floating bars: one dataset per row, each cell the bar [row, row + 1] of its column
// (x stacked: the rows share the column; y not: no sums), coloured by its value; `v` holds the
// values for the tooltip. Columns are the x axis' labels.
PageJson heatmap_spec(const std::vector<std::vector<double>>& cells, const PageJson& cols,
                      double lo, double hi) {
  PageJson datasets = PageJson::array();
  for (std::size_t y = 0; y < cells.size(); ++y) {
    PageJson data = PageJson::array(), colors = PageJson::array(), values = PageJson::array();
    for (double v : cells[y]) {
      const bool none = std::isnan(v);
      data.push_back(none ? PageJson(nullptr) : PageJson::array({y, y + 1}));
      colors.push_back(heat(none ? kNaN : hi > lo ? (v - lo) / (hi - lo) : 0));
      values.push_back(num(v));
    }
    datasets.push_back({{"data", std::move(data)},
                        {"backgroundColor", std::move(colors)},
                        {"v", std::move(values)},
                        {"borderWidth", 0},
                        {"barPercentage", 1.0},
                        {"categoryPercentage", 1.0}});
  }
  return {{"type", "bar"},
          {"data", {{"labels", cols}, {"datasets", std::move(datasets)}}},
          {"options",
           {{"plugins", {{"legend", {{"display", false}}}}},
            {"scales",
             {{"x",
               {{"stacked", true},
                {"title", axis_title("message size")},
                {"grid", {{"display", false}}}}},
              {"y",
               {{"type", "linear"},
                {"reverse", true},
                {"min", 0},
                {"max", static_cast<double>(cells.size())},
                {"grid", {{"display", false}}}}}}}}}};
}

// ---- sections ----

void verdict_section(Page& p, const RunFile& file, const RunAnalysis& a) {
  const Verdict& v = a.verdict;
  const std::string status = verdict_status(v);
  p.html << "<header class=\"verdict " << markup_escape(status) << "\"><h1>"
         << markup_escape(v.headline) << "</h1>\n<p>" << markup_escape(v.tested)
         << "</p>\n<p class=\"counts\">checks: " << v.passed << " passed, " << v.warned
         << " warned, " << v.failed << " failed, " << v.skipped << " skipped &middot; exit code "
         << static_cast<int>(v.code) << " &middot; "
         << markup_escape(file.path().filename().string()) << "</p></header>\n";
  p.html << "<p id=\"report-errors\" class=\"errors\" hidden></p>\n";
}

void checks_section(Page& p, const RunAnalysis& a) {
  p.html << "<section id=\"checks\"><h2>Checks</h2>\n<table><thead><tr><th>status</th>"
            "<th>check</th><th>subject</th><th>value</th><th>expected</th><th>evidence</th>"
            "<th>message</th></tr></thead><tbody>\n";
  for (const CheckGroup& g : group_checks(a.verdict.findings)) {
    for (const Finding* f : g.findings) {
      const std::string unit = f->unit.empty() ? "" : " " + f->unit;
      p.html << "<tr class=\"" << to_string(f->status) << "\"><td>" << to_string(f->status)
             << "</td><td>" << markup_escape(f->check) << "</td><td>" << markup_escape(f->subject)
             << "</td><td>"
             << (std::isnan(f->value) ? "" : markup_escape(general_text(f->value, 4) + unit))
             << "</td><td>"
             << (std::isnan(f->expected) ? "" : markup_escape(general_text(f->expected, 4) + unit))
             << "</td><td>" << markup_escape(f->evidence) << "</td><td>"
             << markup_escape(f->message) << "</td></tr>\n";
    }
  }
  p.html << "</tbody></table>\n";
  const std::vector<DrainEntry> drain = drain_list(a.verdict.findings);
  p.html << "<h3>Drain</h3>\n";
  if (drain.empty()) {
    p.html << "<p>No node to drain: no failed check is attributable to one node.</p>\n";
  } else {
    p.html << "<table><thead><tr><th>host</th><th>reason</th><th>command (not run)</th></tr>"
              "</thead><tbody>\n";
    for (const DrainEntry& d : drain) {
      p.html << "<tr class=\"fail\"><td>" << markup_escape(d.host) << "</td><td>"
             << markup_escape(d.reason) << "</td><td><code>" << markup_escape(scontrol_drain(d))
             << "</code></td></tr>\n";
    }
    p.html << "</tbody></table>\n";
  }
  p.html << "</section>\n";
}

void compare_section(Page& p, const Comparison& c) {
  p.html << "<section id=\"compare\"><h2>Against the baseline</h2>\n<p class=\"verdict-line "
         << (c.regressed()        ? "fail"
             : c.nothing_judged() ? "warn"
                                  : "pass")
         << "\">" << c.verdict_words() << ": " << c.slower_groups << " place(s) slower, "
         << c.faster_groups << " faster; " << c.judged << " item(s) judged at alpha "
         << general_text(c.alpha, 3) << " (Bonferroni: " << general_text(c.alpha_per_item, 3)
         << " per item), " << c.not_judged << " not judged"
         << (c.not_judged > 0 ? " (" + markup_escape(not_judged_reasons(c)) + ")" : "")
         << "; minimum effect " << general_text(c.min_effect * 100, 3)
         << "% (ranks and nodes against their peers: "
         << general_text(std::max(c.min_effect, c.min_effect_per_rank) * 100, 3) << "%). "
         << "Baseline: " << markup_escape(c.before_path) << "</p>\n";
  for (const std::string& w : c.warnings)
    p.html << "<p class=\"warn\">" << markup_escape(w) << "</p>\n";
  if (!c.only_in_before.empty() || !c.only_in_after.empty()) {
    p.html << "<p>Only in the baseline: " << c.only_in_before.size()
           << "; only in this run: " << c.only_in_after.size() << ".</p>\n";
  }
  p.html << "<table><thead><tr><th>place</th><th>phase</th><th>result</th><th>ratio</th>"
            "<th>p</th><th>changed / judged</th><th>what changed</th></tr></thead><tbody>\n";
  std::size_t unchanged = 0;
  for (const CompareGroup& g : c.groups) {
    if (g.result == CompareGroup::Result::kSame) {
      ++unchanged;
      continue;
    }
    const char* cls = g.result == CompareGroup::Result::kSlower ? "fail" : "pass";
    p.html << "<tr class=\"" << cls << "\"><td>" << markup_escape(g.name) << "</td><td>"
           << markup_escape(g.phase) << "</td><td>" << result_name(g.result) << "</td><td>"
           << fixed_text(g.ratio, 3) << "</td><td>" << general_text(g.p, 2) << "</td><td>"
           << g.slower + g.faster << " / " << g.judged << "</td><td>"
           << markup_escape(join(g.changed, ", ")) << "</td></tr>\n";
  }
  p.html << "<tr><td colspan=\"7\">" << unchanged << " place(s) unchanged</td></tr>\n"
         << "</tbody></table>\n";

  // Ratio with its interval: the changed items, then the largest other changes, at most 40.
  std::vector<const CompareItem*> shown;
  for (const CompareItem& i : c.items) {
    if (i.result == CompareItem::Result::kSlower || i.result == CompareItem::Result::kFaster) {
      shown.push_back(&i);
    }
  }
  std::vector<const CompareItem*> rest;
  for (const CompareItem& i : c.items) {
    if (i.result == CompareItem::Result::kSame) rest.push_back(&i);
  }
  std::sort(rest.begin(), rest.end(), [](const CompareItem* x, const CompareItem* y) {
    return std::abs(std::log(x->ratio)) > std::abs(std::log(y->ratio));
  });
  for (const CompareItem* i : rest) shown.push_back(i);
  if (shown.size() > 40) shown.resize(40);
  if (shown.empty()) {
    p.html << "<p>No item could be judged.</p></section>\n";
    return;
  }
  PageJson labels = PageJson::array(), bars = PageJson::array(), points = PageJson::array(),
           colors = PageJson::array();
  for (const CompareItem* i : shown) {
    std::string label = i->what;
    if (!i->size.empty()) label += " " + i->size;
    if (!i->where.empty()) label += " @ " + i->where;
    labels.push_back(label);
    bars.push_back(PageJson::array({num(i->lo), num(i->hi)}));
    points.push_back(num(i->ratio));
    colors.push_back(i->result == CompareItem::Result::kSlower   ? "rgba(214,39,40,0.6)"
                     : i->result == CompareItem::Result::kFaster ? "rgba(44,160,44,0.6)"
                                                                 : "rgba(127,127,127,0.4)");
  }
  p.html << "<h3>Ratio after / before with its interval</h3>\n<p class=\"note\">Red: slower "
            "beyond noise; green: faster; grey: the largest changes that are within noise.</p>\n";
  const int height = 60 + 18 * static_cast<int>(shown.size());
  p.chart({{"type", "bar"},
           {"data",
            {{"labels", labels},
             {"datasets",
              PageJson::array({{{"label", "interval"}, {"data", bars}, {"backgroundColor", colors}},
                               {{"label", "ratio"},
                                {"type", "line"},
                                {"showLine", false},
                                {"data", points},
                                {"pointRadius", 4},
                                {"backgroundColor", "#000"},
                                {"borderColor", "#000"}}})}}},
           {"options",
            {{"indexAxis", "y"},
             {"scales",
              {{"x", {{"title", axis_title("after / before (1 = unchanged)")}}},
               {"y", {{"ticks", {{"autoSkip", false}, {"font", {{"size", 10}}}}}}}}}}}},
          PageJson::object(), height);
  p.html << "</section>\n";
}

std::string scope_key(const std::string& scope) {
  return scope.rfind("rail", 0) == 0 ? "rail" : scope;
}

void collectives_section(Page& p, const RunFile& file, const RunAnalysis& a) {
  const CollectivesData& d = a.collectives;
  p.html << "<section id=\"collectives\"><h2>Collectives</h2>\n";
  if (!d.ran) {
    p.html << "<p>Not in this run.</p></section>\n";
    return;
  }
  std::vector<std::string> scopes;
  for (const SweepData& s : d.sweeps) {
    if (std::find(scopes.begin(), scopes.end(), s.scope) == scopes.end()) scopes.push_back(s.scope);
  }
  // world, intra_node, inter_node, then the rails in order.
  auto scope_order = [](const std::string& s) {
    return s == "world" ? 0 : s == "intra_node" ? 1 : s == "inter_node" ? 2 : 3;
  };
  std::stable_sort(scopes.begin(), scopes.end(), [&](const std::string& x, const std::string& y) {
    return scope_order(x) != scope_order(y) ? scope_order(x) < scope_order(y) : x < y;
  });
  for (const auto& [scope, why] : d.skipped_scopes) {
    p.html << "<p class=\"note\">" << markup_escape(scope) << ": not run (" << markup_escape(why)
           << ")</p>\n";
  }
  for (const std::string& scope : scopes) {
    PageJson datasets = PageJson::array();
    std::map<std::string, double> expected;  // op -> GB/s from the platform
    std::size_t k = 0;
    std::uint64_t largest = 0;
    for (const SweepData& s : d.sweeps) {
      if (s.scope != scope || !s.unsupported.empty() || s.measured() == 0) continue;
      PageJson pts = PageJson::array();
      for (std::size_t i = 0; i < s.sizes.size() && i < s.busbw.size(); ++i) {
        if (!std::isfinite(s.busbw[i])) continue;
        pts.push_back(
            {{"x", num(std::log2(static_cast<double>(s.sizes[i])))}, {"y", num(s.busbw[i])}});
        largest = std::max(largest, s.sizes[i]);
      }
      datasets.push_back({{"label", s.op + " " + s.leaf + " " + s.mode},
                          {"data", std::move(pts)},
                          {"borderColor", color(k)},
                          {"backgroundColor", color(k)},
                          {"showLine", true},
                          {"pointRadius", 2}});
      ++k;
      if (a.facts.platform) {
        const auto sc = a.facts.platform->busbw_GBps.find(scope_key(scope));
        if (sc != a.facts.platform->busbw_GBps.end()) {
          const auto op = sc->second.find(s.op);
          if (op != sc->second.end()) expected[s.op] = op->second;
        }
      }
    }
    if (datasets.empty()) continue;
    for (const auto& [op, gbps] : expected) {
      const double from =
          std::log2(static_cast<double>(std::max<std::uint64_t>(1, a.facts.platform->min_bytes)));
      datasets.push_back(
          {{"label", "expected " + op + " (" + a.facts.platform->name + ")"},
           {"data", PageJson::array(
                        {{{"x", num(from)}, {"y", num(gbps)}},
                         {{"x", num(std::log2(static_cast<double>(largest)))}, {"y", num(gbps)}}})},
           {"borderColor", "#555"},
           {"borderDash", PageJson::array({6, 4})},
           {"showLine", true},
           {"pointRadius", 0}});
    }
    p.html << "<h3>" << markup_escape(scope) << ": bus bandwidth against message size</h3>\n";
    p.chart({{"type", "scatter"},
             {"data", {{"datasets", std::move(datasets)}}},
             {"options",
              {{"scales",
                {{"x", {{"type", "linear"}, {"title", axis_title("message size (log2)")}}},
                 {"y", {{"title", axis_title("busbw GB/s")}, {"beginAtZero", true}}}}}}}},
            {{"x_log2_bytes", true}});
  }

  // Heatmaps of the world scope's (else the first scope's) headline sweep.
  const SweepData* head = nullptr;
  const std::string scope0 = std::find(scopes.begin(), scopes.end(), "world") != scopes.end()
                                 ? "world"
                             : scopes.empty() ? ""
                                              : scopes[0];
  for (const SweepData& s : d.sweeps) {
    if (s.scope != scope0 || !s.unsupported.empty() || s.measured() == 0) continue;
    auto rank = [](const SweepData& x) {
      return (x.op == "all_reduce" ? 2 : 0) + (x.mode == "out_of_place" ? 1 : 0);
    };
    if (!head || rank(s) > rank(*head)) head = &s;
  }
  if (!head || !file.has(head->path, schema::coll::kTimeUs)) {
    p.html << "</section>\n";
    return;
  }
  std::size_t iters = 0, nsizes = 0;
  const std::vector<double> t =
      read_sweep_samples(file, *head, schema::coll::kTimeUs, &iters, &nsizes);
  std::vector<double> arr;
  if (file.has(head->path, schema::coll::kArrivalUs)) {
    std::size_t i2 = 0, s2 = 0;
    arr = read_sweep_samples(file, *head, schema::coll::kArrivalUs, &i2, &s2);
    if (i2 != iters || s2 != nsizes) arr.clear();
  }
  const std::size_t world = head->world;
  const Rows rows = chart_rows(a.facts, world);
  std::vector<std::vector<double>> time_cells(rows.labels.size(),
                                              std::vector<double>(nsizes, kNaN));
  std::vector<std::vector<double>> late_cells = time_cells;
  double late_max = 0;
  PageJson cols = PageJson::array();
  const std::size_t slice = iters * world;  // one size's samples [iters, world]
  for (std::size_t s = 0; s < nsizes; ++s) {
    cols.push_back(format_size(head->sizes[s]));
    const std::vector<double> per_rank =
        column_medians(std::span(t).subspan(s * slice, slice), world);
    const double mid = median(per_rank);
    std::vector<double> ratio(world);
    for (std::size_t r = 0; r < world; ++r) ratio[r] = mid > 0 ? per_rank[r] / mid : kNaN;
    const std::vector<double> rowv = per_row(rows, ratio, true);
    for (std::size_t y = 0; y < rowv.size(); ++y) time_cells[y][s] = rowv[y];
    if (arr.empty()) continue;
    // Lateness: each arrival after its iteration's first, then per rank the median.
    std::vector<double> late(arr.begin() + static_cast<std::ptrdiff_t>(s * slice),
                             arr.begin() + static_cast<std::ptrdiff_t>((s + 1) * slice));
    for (std::size_t i = 0; i < iters; ++i) {
      const auto row = std::span(late).subspan(i * world, world);
      double first = std::numeric_limits<double>::infinity();
      for (double v : row) first = v < first ? v : first;  // NaN never is
      for (double& v : row) v -= first;
    }
    const std::vector<double> lv = per_row(rows, column_medians(late, world), true);
    for (std::size_t y = 0; y < lv.size(); ++y) {
      late_cells[y][s] = lv[y];
      if (!std::isnan(lv[y])) late_max = std::max(late_max, lv[y]);
    }
  }
  const std::string name = head->scope + " " + head->op + " " + head->leaf + " " + head->mode;
  const int height = 80 + std::max<int>(200, 6 * static_cast<int>(rows.labels.size()));
  p.html << "<h3>" << markup_escape(name) << ": each rank's time against the median rank</h3>\n"
         << "<p class=\"note\">Median over iterations of the rank's own time, divided by the "
            "median rank's, per size; grey: at the median, dark red: 2x or more; "
         << rows_note(rows) << ".</p>\n";
  p.chart(heatmap_spec(time_cells, cols, 1.0, 2.0),
          {{"heatmap", {{"rows", rows.labels}, {"cols", cols}, {"unit", "x median"}}}}, height);
  if (!arr.empty()) {
    p.html << "<h3>" << markup_escape(name) << ": arrival lateness</h3>\n"
           << "<p class=\"note\">Median over iterations of how long after the iteration's first "
              "rank this one arrived (us; clocks aligned); dark red: "
           << fixed_text(late_max, 1) << " us, the latest; " << rows_note(rows) << ".</p>\n";
    p.chart(heatmap_spec(late_cells, cols, 0.0, late_max),
            {{"heatmap", {{"rows", rows.labels}, {"cols", cols}, {"unit", "us late"}}}}, height);
  }
  p.html << "</section>\n";
}

void gemm_section(Page& p, const RunAnalysis& a) {
  const GemmFindings& g = a.gemm;
  p.html << "<section id=\"gemm\"><h2>GEMM</h2>\n";
  if (!g.ran) {
    p.html << "<p>Not in this run.</p></section>\n";
    return;
  }
  p.html << "<table><thead><tr><th>shape</th><th>formats</th><th>min</th><th>median</th>"
            "<th>max TFLOP/s</th><th>slowest rank</th><th>hashes</th></tr></thead><tbody>\n";
  std::size_t world = 0;
  for (const GemmShapeRow& r : g.rows) {
    world = std::max(world, r.rank_tflops.size());
    p.html << "<tr><td>" << markup_escape(r.name) << "</td><td>" << markup_escape(r.formats)
           << "</td>";
    if (!r.measured) {
      p.html << "<td colspan=\"5\">not measured: " << markup_escape(r.skip_reason)
             << "</td></tr>\n";
      continue;
    }
    p.html << "<td>" << fixed_text(r.min_tflops, 3) << "</td><td>" << fixed_text(r.median_tflops, 3)
           << "</td><td>" << fixed_text(r.max_tflops, 3) << "</td><td>" << markup_escape(r.slowest)
           << "</td><td>" << markup_escape(r.hashes) << "</td></tr>\n";
  }
  p.html << "</tbody></table>\n";
  const Rows rows = chart_rows(a.facts, world);
  PageJson datasets = PageJson::array();
  std::size_t k = 0;
  for (const GemmShapeRow& r : g.rows) {
    if (!r.measured) continue;
    PageJson v = PageJson::array();
    for (double x : per_row(rows, r.rank_tflops, false)) v.push_back(num(x));
    datasets.push_back({{"label", r.name},
                        {"data", std::move(v)},
                        {"borderColor", color(k)},
                        {"backgroundColor", color(k)},
                        {"pointRadius", 2},
                        {"borderWidth", 1}});
    ++k;
  }
  if (a.facts.platform && a.facts.platform->fp8_tflops > 0 && g.engine == "cublaslt") {
    datasets.push_back(
        {{"label", "expected (" + a.facts.platform->name + ")"},
         {"data", PageJson(std::vector<double>(rows.labels.size(), a.facts.platform->fp8_tflops))},
         {"borderColor", "#555"},
         {"borderDash", PageJson::array({6, 4})},
         {"pointRadius", 0}});
  }
  if (!datasets.empty()) {
    p.html << "<h3>TFLOP/s per " << rows.per() << " and shape (" << markup_escape(g.engine)
           << ")</h3>\n<p class=\"note\">Each rank's median iteration; " << rows_note(rows)
           << " (its slowest).</p>\n";
    p.chart({{"type", "line"},
             {"data", {{"labels", rows.labels}, {"datasets", std::move(datasets)}}},
             {"options",
              {{"scales", {{"y", {{"title", axis_title("TFLOP/s")}, {"beginAtZero", true}}}}}}}});
  }
  p.html << "</section>\n";
}

// Per rank the median over the steps of a [steps, world] dataset; empty when missing.
std::vector<double> rank_medians(const RunFile& file, const std::string& group,
                                 const schema::Dataset<double>& d) {
  if (!file.has(group, d)) return {};
  std::vector<std::uint64_t> dims;
  const std::vector<double> v = file.read(group, d, &dims);
  return dims.size() == 2 ? column_medians(v, dims[1]) : std::vector<double>{};
}

void train_section(Page& p, const RunFile& file, const RunAnalysis& a) {
  const TrainFindings& t = a.train;
  p.html << "<section id=\"train\"><h2>Training step</h2>\n";
  if (!t.ran) {
    p.html << "<p>Not in this run.</p></section>\n";
    return;
  }
  const TrainSummary& s = t.summary;
  p.html << "<p>" << markup_escape(s.layout) << "; " << s.steps << " steps; step median "
         << fixed_text(s.step_med_ms, 2) << " ms (p95 " << fixed_text(s.step_p95_ms, 2)
         << "); exposed DP communication " << fixed_text(s.dp_exposed_ms, 2)
         << " ms; overlap efficiency " << fixed_text(s.overlap_efficiency * 100, 0) << "%; "
         << fixed_text(s.tokens_per_s, 0) << " tokens/s; MFU "
         << (std::isnan(s.mfu) ? "-" : fixed_text(s.mfu * 100, 1) + "%") << "</p>\n";
  const std::string g = schema::kTrainGroup;
  const std::pair<const char*, const schema::Dataset<double>*> parts[] = {
      {"forward", &schema::training::kFwdMs},
      {"backward", &schema::training::kBwdMs},
      {"TP communication", &schema::training::kTpCommMs},
      {"exposed DP communication", &schema::training::kDpExposedMs},
      {"optimizer", &schema::training::kOptimMs}};
  std::vector<std::vector<double>> medians;
  std::size_t world = 0;
  for (const auto& [name, d] : parts) {
    medians.push_back(rank_medians(file, g, *d));
    world = std::max(world, medians.back().size());
  }
  if (world == 0) {
    p.html << "<p>No per-rank step times in the file.</p></section>\n";
    return;
  }
  // Per row: the rank whose components add up to the longest step, shown whole.
  const Rows rows = chart_rows(a.facts, world);
  std::vector<int> pick(rows.labels.size(), -1);
  std::vector<double> best(rows.labels.size(), -1);
  for (std::size_t r = 0; r < world; ++r) {
    double sum = 0;
    for (const auto& m : medians) {
      if (r < m.size() && std::isfinite(m[r])) sum += m[r];
    }
    const int row = rows.of_rank[r];
    if (row >= 0 && sum > best[static_cast<std::size_t>(row)]) {
      best[static_cast<std::size_t>(row)] = sum;
      pick[static_cast<std::size_t>(row)] = static_cast<int>(r);
    }
  }
  PageJson datasets = PageJson::array();
  for (std::size_t k = 0; k < medians.size(); ++k) {
    PageJson v = PageJson::array();
    for (int r : pick) {
      v.push_back(r >= 0 && static_cast<std::size_t>(r) < medians[k].size() ? num(medians[k][r])
                                                                            : PageJson(nullptr));
    }
    datasets.push_back(
        {{"label", parts[k].first}, {"data", std::move(v)}, {"backgroundColor", color(k)}});
  }
  p.html << "<h3>Step breakdown per " << rows.per() << " (median ms)</h3>\n<p class=\"note\">"
         << rows_note(rows) << " (the one with the longest step).</p>\n";
  p.chart({{"type", "bar"},
           {"data", {{"labels", rows.labels}, {"datasets", std::move(datasets)}}},
           {"options",
            {{"scales",
              {{"x", {{"stacked", true}}},
               {"y", {{"stacked", true}, {"title", axis_title("ms")}}}}}}}});
  p.html << "</section>\n";
}

void checkpoint_section(Page& p, const RunFile& file, const RunAnalysis& a) {
  const CheckpointFindings& c = a.checkpoint;
  p.html << "<section id=\"checkpoint\"><h2>Checkpoint</h2>\n";
  if (!c.ran) {
    p.html << "<p>Not in this run.</p></section>\n";
    return;
  }
  const CheckpointSummary& s = c.summary;
  p.html << "<p>" << markup_escape(s.api) << " " << markup_escape(s.layout) << " on "
         << markup_escape(s.fs_type) << " (" << markup_escape(s.dir) << "); "
         << markup_escape(s.shards) << "; " << s.iters << " iteration(s); write "
         << fixed_text(s.write_gbps, 2) << " GB/s, read " << fixed_text(s.read_gbps, 2)
         << " GB/s (aggregate, median); restore " << fixed_text(s.restore_s, 3) << " s</p>\n";
  namespace ck = schema::checkpoint;
  const std::string g = schema::kCheckpointGroup;
  if (!file.has(g, ck::kBytes) || !file.has(g, ck::kWriteStartS) || !file.has(g, ck::kReadS)) {
    p.html << "</section>\n";
    return;
  }
  const std::vector<std::int64_t> bytes = file.read(g, ck::kBytes);
  std::vector<std::int64_t> reads_of;
  if (file.has(g, ck::kReadsShardOf)) reads_of = file.read(g, ck::kReadsShardOf);
  std::vector<std::uint64_t> dims;
  const std::vector<double> ws = file.read(g, ck::kWriteStartS, &dims);
  const std::vector<double> we = file.read(g, ck::kWriteEndS);
  const std::vector<double> rs = file.read(g, ck::kReadS);
  if (dims.size() != 2 || we.size() != ws.size() || rs.size() != ws.size()) {
    p.html << "</section>\n";
    return;
  }
  const std::size_t world = dims[1];
  // Each rank's write (its open to its close) and restore, median over iterations.
  std::vector<double> write_s(ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) write_s[i] = we[i] - ws[i];
  const std::vector<double> write_med = column_medians(write_s, world),
                            read_med = column_medians(rs, world);
  std::vector<double> wgb(world, kNaN), rgb(world, kNaN);
  for (std::size_t r = 0; r < world && r < bytes.size(); ++r) {
    if (write_med[r] > 0) wgb[r] = static_cast<double>(bytes[r]) / write_med[r] / 1e9;
    const std::size_t of = r < reads_of.size() && reads_of[r] >= 0 &&
                                   static_cast<std::size_t>(reads_of[r]) < bytes.size()
                               ? static_cast<std::size_t>(reads_of[r])
                               : r;
    if (read_med[r] > 0) rgb[r] = static_cast<double>(bytes[of]) / read_med[r] / 1e9;
  }
  const Rows rows = chart_rows(a.facts, world);
  PageJson wv = PageJson::array(), rv = PageJson::array();
  for (double v : per_row(rows, wgb, false)) wv.push_back(num(v));
  for (double v : per_row(rows, rgb, false)) rv.push_back(num(v));
  p.html << "<h3>GB/s per " << rows.per()
         << "</h3>\n<p class=\"note\">Each rank's shard over its own open-to-close time (write) "
            "and its restore's open, reads and close (read), median over iterations; "
         << rows_note(rows) << " (its slowest).</p>\n";
  p.chart(
      {{"type", "bar"},
       {"data",
        {{"labels", rows.labels},
         {"datasets",
          PageJson::array(
              {{{"label", "write GB/s"}, {"data", wv}, {"backgroundColor", color(0)}},
               {{"label", "read GB/s"}, {"data", rv}, {"backgroundColor", color(2)}}})}}},
       {"options", {{"scales", {{"y", {{"title", axis_title("GB/s")}, {"beginAtZero", true}}}}}}}});
  p.html << "</section>\n";
}

// Per rank (or node) the devices' medians alone, and per node the unidirectional pair matrix as a
// heatmap table: each cell shaded by its share of the node's fastest pair.
void devices_section(Page& p, const RunAnalysis& a) {
  const DevicesFindings& d = a.devices;
  p.html << "<section id=\"devices\"><h2>Devices</h2>\n";
  if (!d.ran || d.tests.empty()) {
    p.html << "<p>Not in this run.</p></section>\n";
    return;
  }
  p.html << "<p>" << markup_escape(devices_title(d))
         << ". Copy and triad count bytes read + written (STREAM); host&lt;-&gt;device and pair "
            "copies count bytes copied.</p>\n";
  const Rows rows = chart_rows(a.facts, d.world);
  PageJson datasets = PageJson::array();
  for (std::size_t k = 0; k < d.tests.size(); ++k) {
    const std::vector<double> med = column_medians(d.tests[k].alone, d.world);
    PageJson v = PageJson::array();
    for (double x : per_row(rows, med, false)) v.push_back(num(x));
    datasets.push_back({{"label", d.tests[k].name + " GB/s"},
                        {"data", std::move(v)},
                        {"backgroundColor", color(k)}});
  }
  p.html << "<h3>Each device alone, GB/s per " << rows.per() << "</h3>\n<p class=\"note\">Median "
         << "over the trials; " << rows_note(rows) << " (its slowest).</p>\n";
  p.chart(
      {{"type", "bar"},
       {"data", {{"labels", rows.labels}, {"datasets", std::move(datasets)}}},
       {"options", {{"scales", {{"y", {{"title", axis_title("GB/s")}, {"beginAtZero", true}}}}}}}});
  constexpr std::size_t kNodesShown = 16;
  std::size_t shown = 0, with_pairs = 0;
  for (const DevicesNode& n : d.nodes) {
    if (n.modes.empty()) continue;
    const PairMatrix& m = n.modes.front();
    double best = 0;
    for (std::size_t s = 0; s < m.g; ++s) {
      for (std::size_t t = 0; t < m.g; ++t) {
        const double v = m.median(s, t);
        if (!std::isnan(v)) best = std::max(best, v);
      }
    }
    if (best <= 0) continue;
    ++with_pairs;
    if (shown++ >= kNodesShown) continue;
    p.html << "<h3>" << markup_escape(a.facts.node_name(n.node))
           << ": pairs one way, GB/s (row: source slot, column: destination slot)</h3>\n"
              "<table class=\"heatmap\"><thead><tr><th></th>";
    for (std::size_t t = 0; t < m.g; ++t) p.html << "<th>dst " << t << "</th>";
    p.html << "</tr></thead><tbody>\n";
    for (std::size_t s = 0; s < m.g; ++s) {
      p.html << "<tr><th>src " << s << "</th>";
      for (std::size_t t = 0; t < m.g; ++t) {
        const double v = m.median(s, t);
        if (std::isnan(v)) {
          p.html << "<td>-</td>";
          continue;
        }
        // Full share: white; the slower, the redder.
        const int shade = static_cast<int>(std::clamp(255.0 * v / best, 0.0, 255.0));
        p.html << "<td style=\"background:rgb(255," << shade << "," << shade << ")\">"
               << fixed_text(v, 1) << "</td>";
      }
      p.html << "</tr>\n";
    }
    p.html << "</tbody></table>\n";
  }
  if (with_pairs > kNodesShown) {
    p.html << "<p class=\"note\">" << (with_pairs - kNodesShown)
           << " more nodes with pairs: `shakedown summary --detail` lists every matrix.</p>\n";
  }
  p.html << "</section>\n";
}

// The link scan per rail: the node x node matrix of first-pass medians as a heatmap table, each
// cell shaded by its share of the rail's best pair (figures in the cells up to 32 nodes, in each
// cell's tooltip up to 128), and each node's median pair as a bar (all a page can hold beyond 128
// nodes). Then the suspects' outcomes with their evidence.
void links_section(Page& p, const RunAnalysis& a) {
  const LinkscanFindings& lf = a.linkscan;
  p.html << "<section id=\"links\"><h2>Links</h2>\n";
  if (!lf.ran) {
    p.html << "<p>No link scan in this run: the link matrix appears when one has run.</p>\n"
              "</section>\n";
    return;
  }
  p.html << "<p>" << markup_escape(linkscan_title(lf)) << ".</p>\n";
  constexpr std::size_t kNumbersUpTo = 32, kTableUpTo = 128;
  for (const LinkscanRail& r : lf.rails) {
    const std::size_t n = r.nodes.size();
    p.html << "<h3>rail " << r.rail
           << (r.net_devices.empty() ? "" : " (" + markup_escape(r.net_devices) + ")");
    if (r.scanned == 0) {
      p.html << ": not scanned</h3>\n<p>" << markup_escape(r.skipped) << "</p>\n";
      continue;
    }
    const double best = r.reference.best_bw_GBps;
    p.html << ": " << r.scanned << " pairs of " << n << " nodes, best " << general_text(best, 3)
           << " GB/s</h3>\n";
    const std::vector<double> m = linkscan_matrix(r);
    const auto shade = [&](double v) {
      // The best pair white; the slower, the redder.
      return static_cast<int>(std::clamp(255.0 * v / best, 0.0, 255.0));
    };
    if (n <= kTableUpTo) {
      p.html << "<p class=\"note\">GB/s, median of each pair's windows; row and column: node. "
             << (n > kNumbersUpTo ? "Hover a cell for its figure. " : "")
             << "White: the best pair; the redder, the slower.</p>\n"
                "<table class=\"heatmap"
             << (n > kNumbersUpTo ? " dense" : "") << "\"><thead><tr><th></th>";
      for (std::size_t b = 0; b < n; ++b) p.html << "<th>" << r.nodes[b] << "</th>";
      p.html << "</tr></thead><tbody>\n";
      for (std::size_t i = 0; i < n; ++i) {
        p.html << "<tr><th>" << r.nodes[i] << "</th>";
        for (std::size_t j = 0; j < n; ++j) {
          const double v = m[i * n + j];
          if (std::isnan(v)) {
            p.html << "<td>" << (i == j ? "" : "-") << "</td>";
            continue;
          }
          const int c = shade(v);
          p.html << "<td style=\"background:rgb(255," << c << "," << c << ")\" title=\"node "
                 << r.nodes[i] << " - node " << r.nodes[j] << ": " << general_text(v, 3)
                 << " GB/s\">" << (n <= kNumbersUpTo ? general_text(v, 3) : "") << "</td>";
        }
        p.html << "</tr>\n";
      }
      p.html << "</tbody></table>\n";
    } else {
      p.html << "<p class=\"note\">" << n << " nodes: too many for a table; the bars below show "
             << "each node, and `shakedown summary --detail` lists every pair.</p>\n";
    }
    // Each node's median over its pairs of the scan: a slow node is a short bar.
    PageJson labels = PageJson::array(), values = PageJson::array();
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> row;
      for (std::size_t j = 0; j < n; ++j) {
        if (!std::isnan(m[i * n + j])) row.push_back(m[i * n + j]);
      }
      labels.push_back(std::to_string(r.nodes[i]));
      values.push_back(num(row.empty() ? std::nan("") : median(row)));
    }
    p.chart({{"type", "bar"},
             {"data",
              {{"labels", std::move(labels)},
               {"datasets", PageJson::array({{{"label", "median of the node's pairs, GB/s"},
                                              {"data", std::move(values)},
                                              {"backgroundColor", color(0)}}})}}},
             {"options",
              {{"scales",
                {{"x", {{"title", axis_title("node")}}},
                 {"y", {{"title", axis_title("GB/s")}, {"beginAtZero", true}}}}}}}});
    const std::vector<std::string> outcomes = linkscan_outcomes(r, a.facts);
    if (!outcomes.empty()) {
      p.html << "<ul>\n";
      for (const std::string& line : outcomes) p.html << "<li>" << markup_escape(line) << "</li>\n";
      p.html << "</ul>\n";
    }
  }
  p.html << "</section>\n";
}

// Telemetry: each plotted signal over the run (the decimated series, seconds since the first
// phase began), one line per device, the phases as shaded bands. GPUs' power, SM clock and
// temperature; without GPUs the host's slowest core clock and load. Up to kTelemetryLines lines
// per chart: the nodes whose telemetry saw an event first.
void telemetry_section(Page& p, const RunAnalysis& a) {
  namespace tg = telemetry::gpu;
  namespace th = telemetry::host;
  constexpr std::size_t kTelemetryLines = 32;
  const TelemetryFindings& t = a.telemetry;
  p.html << "<section id=\"telemetry\"><h2>Telemetry</h2>\n";
  if (!t.ran || t.nodes.empty()) {
    p.html << "<p>No telemetry in this run (telemetry.enabled: false, or a file from before "
              "telemetry).</p>\n</section>\n";
    return;
  }
  double t0 = std::numeric_limits<double>::infinity();
  std::size_t gpus = 0;
  for (const TelemetryNode& n : t.nodes) {
    if (!n.phase_start_us.empty()) t0 = std::min(t0, n.phase_start_us.front());
    gpus += n.gpus().size();
  }
  if (!std::isfinite(t0)) t0 = 0;
  p.html << "<p>" << t.nodes.size() << " node(s) sampled every " << t.interval_ms << " ms, " << gpus
         << " GPU(s); each line is one device's decimated series, the shaded bands the "
         << "phases (docs/telemetry.md).</p>\n";
  // Nodes with events first, then in order.
  std::vector<const TelemetryNode*> order;
  for (const TelemetryNode& n : t.nodes) {
    if (!n.events.empty()) order.push_back(&n);
  }
  for (const TelemetryNode& n : t.nodes) {
    if (n.events.empty()) order.push_back(&n);
  }
  struct Plot {
    const char* signal;
    const char* title;
    const char* unit;
    bool gpu;
  };
  const std::vector<Plot> plots =
      gpus > 0 ? std::vector<Plot>{{tg::kPower, "GPU power", "W", true},
                                   {tg::kSmClock, "GPU SM clock", "MHz", true},
                                   {tg::kTemperature, "GPU temperature", "C", true}}
               : std::vector<Plot>{{th::kCpuMhzMin, "slowest core's clock", "MHz", false},
                                   {th::kLoad, "load (1 min)", "load", false}};
  for (const Plot& plot : plots) {
    PageJson datasets = PageJson::array();
    double high = 0;
    std::size_t lines = 0, left_out = 0;
    for (const TelemetryNode* n : order) {
      const std::size_t nc = n->channels.size();
      for (std::size_t c = 0; c < nc; ++c) {
        if (n->channels[c].signal != plot.signal) continue;
        if (lines == kTelemetryLines) {
          ++left_out;
          continue;
        }
        PageJson points = PageJson::array();
        for (std::size_t r = 0; r < n->decimated_time_us.size(); ++r) {
          const double v = n->decimated[r * nc + c];
          if (!std::isfinite(v)) continue;
          high = std::max(high, v);
          points.push_back({{"x", num((n->decimated_time_us[r] - t0) * 1e-6)}, {"y", num(v)}});
        }
        if (points.empty()) continue;
        datasets.push_back({{"label", "node " + std::to_string(n->node) +
                                          (plot.gpu ? " " + n->channels[c].device : "")},
                            {"data", std::move(points)},
                            {"borderColor", color(lines)},
                            {"pointRadius", 0},
                            {"borderWidth", 1}});
        ++lines;
      }
    }
    if (lines == 0) continue;
    // The phases of the first node shown, as bands up to the highest value.
    const TelemetryNode& first = *order.front();
    for (std::size_t ph = 0; ph < first.phases.size(); ++ph) {
      const double from = (first.phase_start_us[ph] - t0) * 1e-6;
      const double to = (first.phase_end_us[ph] - t0) * 1e-6;
      datasets.push_back(
          {{"label", first.phases[ph]},
           {"data", PageJson::array({{{"x", num(from)}, {"y", num(high)}},
                                     {{"x", num(to)}, {"y", num(high)}}})},
           {"fill", "origin"},
           {"backgroundColor", ph % 2 == 0 ? "rgba(0,0,0,0.06)" : "rgba(0,0,0,0.02)"},
           {"borderWidth", 0},
           {"pointRadius", 0}});
    }
    p.html << "<h3>" << plot.title << "</h3>\n";
    if (left_out > 0) {
      p.html << "<p class=\"note\">" << lines << " of " << lines + left_out
             << " devices shown (nodes with events first); the run file has every one.</p>\n";
    }
    p.chart({{"type", "line"},
             {"data", {{"datasets", std::move(datasets)}}},
             {"options",
              {{"scales",
                {{"x", {{"type", "linear"}, {"title", axis_title("s since the first phase")}}},
                 {"y", {{"title", axis_title(plot.unit)}}}}},
               {"plugins", {{"legend", {{"display", lines <= 16}}}}}}}});
  }
  p.html << "</section>\n";
}

void facts_section(Page& p, const RunFile& file, const RunAnalysis& a) {
  const RunMeta& m = a.facts.meta;
  p.html << "<section id=\"run\"><h2>Run</h2>\n<table><tbody>\n";
  const std::pair<const char*, std::string> rows[] = {
      {"file", file.path().string()},
      {"shakedown", m.shakedown_version},
      {"schema version", std::to_string(m.schema_version)},
      {"status", m.status},
      {"started", m.started_utc},
      {"finished", m.finished_utc},
      {"command line", m.command_line},
      {"ranks", std::to_string(m.world_size)},
      {"nodes", std::to_string(m.node_count) + (m.virtual_nodes ? " (virtual)" : "")},
      {"backend", m.backend},
      {"platform", a.facts.platform_choice},
      {"sanitizers", a.facts.sanitizers}};
  for (const auto& [k, v] : rows) {
    p.html << "<tr><th>" << k << "</th><td>" << markup_escape(v) << "</td></tr>\n";
  }
  p.html << "</tbody></table>\n<h3>Inventory</h3>\n<table><thead><tr><th>node</th><th>host</th>"
            "<th>CPU</th><th>cores</th><th>memory GiB</th><th>GPUs</th><th>NICs</th>"
            "<th>versions</th></tr></thead><tbody>\n";
  for (const NodeInventory& n : file.inventory()) {
    std::vector<std::string> gpus, nics;
    for (const GpuInfo& gpu : n.gpus) gpus.push_back(gpu.name);
    for (const NicInfo& nic : n.nics) nics.push_back(nic.name + " (" + nic.kind + ")");
    p.html << "<tr><td>" << n.node_index << "</td><td>" << markup_escape(n.hostname) << "</td><td>"
           << markup_escape(n.cpu_model) << "</td><td>" << n.cores << "</td><td>"
           << fixed_text(static_cast<double>(n.memory_bytes) / (1ULL << 30), 1) << "</td><td>"
           << markup_escape(gpus.empty() ? n.gpu_note : join(gpus, ", ")) << "</td><td>"
           << markup_escape(join(nics, ", ")) << "</td><td>MPI " << markup_escape(n.mpi_version)
           << "; NCCL " << markup_escape(n.nccl_version) << "; CUDA "
           << markup_escape(n.cuda_runtime_version) << "; HDF5 " << markup_escape(n.hdf5_version)
           << "; UCX " << markup_escape(n.ucx_version) << "</td></tr>\n";
  }
  p.html << "</tbody></table>\n<details><summary>Topology: " << a.facts.ranks.size()
         << " ranks</summary>\n<table><thead><tr><th>rank</th><th>node</th><th>host</th>"
            "<th>local</th><th>CPUs</th><th>NUMA</th><th>GPU</th><th>NIC</th><th>leaf</th>"
            "</tr></thead><tbody>\n";
  for (const RankInfo& r : a.facts.ranks) {
    p.html << "<tr><td>" << r.rank << "</td><td>" << r.node_index << "</td><td>"
           << markup_escape(r.hostname) << "</td><td>" << r.local_rank << "</td><td>"
           << markup_escape(r.cpus) << "</td><td>" << markup_escape(r.numa) << "</td><td>"
           << markup_escape(r.gpu_index >= 0 ? r.gpu.name + " " + r.gpu.pci_bus_id : r.gpu_note)
           << "</td><td>" << markup_escape(r.nic) << "</td><td>" << markup_escape(r.leaf_switch)
           << "</td></tr>\n";
  }
  p.html << "</tbody></table></details>\n";
  if (!a.facts.placement.empty()) {
    p.html << "<h3>Placement</h3>\n<table><tbody>\n";
    for (const CheckResult& c : a.facts.placement) {
      p.html << "<tr class=\"" << to_string(c.status) << "\"><td>" << to_string(c.status)
             << "</td><td>" << markup_escape(c.name) << "</td><td>" << markup_escape(c.reason)
             << "</td></tr>\n";
    }
    p.html << "</tbody></table>\n";
  }
  p.html << "<details><summary>Effective configuration</summary><pre>"
         << markup_escape(m.config_yaml) << "</pre></details>\n</section>\n";
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#222}
header.verdict{padding:12px 16px;margin:16px 0;border-radius:6px;color:#fff;background:#555}
header.verdict h1{font-size:20px;margin:0 0 4px}
header.pass{background:#2e7d32}header.warn{background:#b26a00}
header.fail,header.corruption,header.aborted,header.incomplete,header.error{background:#b71c1c}
table{border-collapse:collapse;margin:8px 0;width:100%}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
tr.fail td{background:#fde8e8}tr.warn td{background:#fff4e0}tr.skip td{color:#777}
.chart{position:relative;margin:8px 0 24px}
.note{color:#555;font-size:12px}.errors{color:#b71c1c;font-weight:bold}
p.verdict-line.fail{color:#b71c1c;font-weight:bold}p.verdict-line.pass{color:#2e7d32;font-weight:bold}p.verdict-line.warn{color:#b26a00;font-weight:bold}
p.warn{color:#b26a00}
nav a{margin-right:12px}
table.heatmap td{text-align:right;min-width:4em}
table.heatmap.dense td{min-width:0;width:8px;height:8px;padding:0}
table.heatmap.dense th{font-size:8px;padding:0 1px}
)";

}  // namespace

std::string format_html(const RunFile& file, const RunAnalysis& analysis,
                        const Comparison* baseline) {
  Page p;
  verdict_section(p, file, analysis);
  p.html << "<nav><a href=\"#checks\">checks</a>"
         << (baseline ? "<a href=\"#compare\">baseline</a>" : "")
         << "<a href=\"#devices\">devices</a><a href=\"#collectives\">collectives</a><a "
            "href=\"#gemm\">gemm</a>"
            "<a href=\"#train\">train</a><a href=\"#checkpoint\">checkpoint</a>"
            "<a href=\"#links\">links</a><a href=\"#telemetry\">telemetry</a>"
            "<a href=\"#run\">run</a></nav>\n";
  checks_section(p, analysis);
  if (baseline) compare_section(p, *baseline);
  devices_section(p, analysis);
  collectives_section(p, file, analysis);
  gemm_section(p, analysis);
  train_section(p, file, analysis);
  checkpoint_section(p, file, analysis);
  links_section(p, analysis);
  telemetry_section(p, analysis);
  facts_section(p, file, analysis);

  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>shakedown: ";
  out += markup_escape(analysis.verdict.headline);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style></head>\n<body data-charts-expected=\"" + std::to_string(p.charts()) + "\">\n";
  out += p.html.str();
  out += "<script type=\"application/json\" id=\"shakedown-data\">";
  out += p.data();
  out += "</script>\n<script>/* Chart.js (MIT license), from Debian's libjs-chart.js */\n";
  out += chartjs_source();
  out += "\n</script>\n<script>\n";
  out += report_script();
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace shakedown
