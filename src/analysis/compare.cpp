#include "analysis/compare.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "analysis/collectives_data.hpp"
#include "analysis/compare_stats.hpp"
#include "analysis/linkscan_report.hpp"
#include "analysis/number_text.hpp"
#include "analysis/run_facts.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

// "a.b.c" -> scalar text, for naming the configuration keys two runs differ in.
void flatten(const YAML::Node& n, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      flatten(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
  } else if (n.IsSequence()) {
    YAML::Emitter e;
    e << YAML::Flow << n;
    out[prefix] = e.c_str();
  } else if (n.IsScalar()) {
    out[prefix] = n.as<std::string>();
  }
}

std::vector<std::string> config_differences(const std::string& a, const std::string& b) {
  std::map<std::string, std::string> fa, fb;
  try {
    flatten(YAML::Load(a), "", fa);
    flatten(YAML::Load(b), "", fb);
  } catch (const YAML::Exception&) {
    return {"(a configuration could not be read)"};
  }
  std::vector<std::string> out;
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  for (const std::string& k : keys) {
    const auto x = fa.find(k), y = fb.find(k);
    const std::string vx = x == fa.end() ? "(absent)" : x->second;
    const std::string vy = y == fb.end() ? "(absent)" : y->second;
    if (vx != vy) out.push_back(k + ": " + vx + " -> " + vy);
  }
  return out;
}

// A rank's identity across runs: its host, node and place on it (rank numbers may differ).
struct RankKey {
  std::string host;
  int node = -1, local = -1;
  auto operator<=>(const RankKey&) const = default;
};

std::map<RankKey, int> rank_keys(const std::vector<RankInfo>& ranks) {
  std::map<RankKey, int> out;
  for (const RankInfo& r : ranks) out[{r.hostname, r.node_index, r.local_rank}] = r.rank;
  return out;
}

std::string node_text(const RankKey& k) {
  return "node " + std::to_string(k.node) + " (host " + k.host + ")";
}

std::vector<double> log_of(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) {
    if (std::isfinite(x) && x > 0) out.push_back(std::log(x));
  }
  return out;
}

// The smallest two-sided p the exact Mann-Whitney test can give n against m samples:
// 2 / C(n + m, n), as its log.
double log_best_p(std::size_t n_before, std::size_t n_after) {
  const double n = static_cast<double>(n_before), m = static_cast<double>(n_after);
  return std::log(2.0) - (std::lgamma(n + m + 1) - std::lgamma(n + 1) - std::lgamma(m + 1));
}

constexpr const char* kTooFewSamples = "too few samples for the test to reach alpha";

// Judges items: the log-time samples before and after, tested and measured (the result is
// decided once the correction over all judged items is known), or left not judged, saying why.
// Holds the exact null distributions it counted, for the next item of the same sample sizes.
class Judge {
 public:
  // `absolute_not_judged`: absolute times (every item but a rank against its run's median) are
  // not judged, with that reason ("" judges them).
  Judge(const CompareOptions& o, std::string absolute_not_judged)
      : o_(o), absolute_not_judged_(std::move(absolute_not_judged)) {}
  void operator()(CompareItem& item, const std::vector<double>& before,
                  const std::vector<double>& after) {
    const std::vector<double> b = log_of(before), a = log_of(after);
    item.n_before = b.size();
    item.n_after = a.size();
    // Samples too few for the exact test to reach alpha even alone are not judged (3
    // checkpoints against 3 give at best p = 0.1); compare_runs then holds the rest to the
    // corrected alpha.
    if (b.size() < 2 || a.size() < 2 || log_best_p(b.size(), a.size()) >= std::log(o_.alpha)) {
      item.not_judged_why = kTooFewSamples;
      return;
    }
    if (item.unit != kRelativeUnit && !absolute_not_judged_.empty()) {
      item.not_judged_why = absolute_not_judged_;
      return;
    }
    item.before_us = std::exp(median(b));
    item.after_us = std::exp(median(a));
    const UTest t = mann_whitney_two_sided(a, b, UMethod::kAuto, &counts_);
    const Shift s = hodges_lehmann(a, b, o_.alpha, &counts_);
    item.p = t.p;
    item.ratio = std::exp(s.estimate);
    item.lo = std::exp(s.lo);
    item.hi = std::exp(s.hi);
    item.result = CompareItem::Result::kSame;
    item.not_judged_why.clear();  // a per-node copy of a not judged item
  }

 private:
  const CompareOptions& o_;
  const std::string absolute_not_judged_;
  UNullCounts counts_;
};

struct SweepKey {
  std::string scope, op, leaf, mode;
  auto operator<=>(const SweepKey&) const = default;
};

void compare_collectives(const RunFile& fb, const RunFile& fa, Judge& judge, Comparison& c) {
  const CollectivesData db = read_collectives(fb), da = read_collectives(fa);
  if (!db.ran && !da.ran) return;
  std::map<SweepKey, const SweepData*> before, after;
  for (const SweepData& s : db.sweeps) before[{s.scope, s.op, s.leaf, s.mode}] = &s;
  for (const SweepData& s : da.sweeps) after[{s.scope, s.op, s.leaf, s.mode}] = &s;
  const std::vector<RankInfo> rb = fb.ranks(), ra = fa.ranks();
  const std::map<RankKey, int> kb = rank_keys(rb), ka = rank_keys(ra);
  // Each node's ranks (as columns of the per-rank datasets) in both runs, for intra_node sweeps.
  std::map<RankKey, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> nodes;
  for (const auto& [k, r] : kb) {
    const auto other = ka.find(k);
    if (other == ka.end() || r < 0 || other->second < 0) continue;
    auto& members = nodes[RankKey{k.host, k.node, -1}];
    members.first.push_back(static_cast<std::size_t>(r));
    members.second.push_back(static_cast<std::size_t>(other->second));
  }
  for (const auto& [key, sb] : before) {
    const std::string name = key.scope + " " + key.op + " " + key.leaf + " " + key.mode;
    const auto it = after.find(key);
    if (it == after.end()) {
      c.only_in_before.push_back("collectives " + name);
      continue;
    }
    const SweepData* sa = it->second;
    for (std::size_t j = 0; j < sa->sizes.size(); ++j) {
      if (sa->skipped[j] == schema::kSkipMeasured &&
          std::find(sb->sizes.begin(), sb->sizes.end(), sa->sizes[j]) == sb->sizes.end()) {
        c.only_in_after.push_back("collectives " + name + " " + format_size(sa->sizes[j]));
      }
    }
    for (std::size_t i = 0; i < sb->sizes.size(); ++i) {
      if (sb->skipped[i] != schema::kSkipMeasured) continue;
      const auto j = std::find(sa->sizes.begin(), sa->sizes.end(), sb->sizes[i]);
      if (j == sa->sizes.end()) {
        c.only_in_before.push_back("collectives " + name + " " + format_size(sb->sizes[i]));
        continue;
      }
      const std::size_t ja = static_cast<std::size_t>(j - sa->sizes.begin());
      if (sa->skipped[ja] != schema::kSkipMeasured) continue;
      std::size_t ib = 0, iat = 0;
      const std::vector<double> tb = read_size_times(fb, *sb, i, &ib);
      const std::vector<double> ta = read_size_times(fa, *sa, ja, &iat);
      CompareItem item;
      item.phase = "collectives";
      item.what = name;
      item.size = format_size(sb->sizes[i]);
      item.group = name;
      // The collective lasts until its slowest rank is done.
      judge(item, iteration_durations(tb, sb->world), iteration_durations(ta, sa->world));
      c.items.push_back(item);
      // Each node's own time where the sweep is inside nodes.
      if (key.scope != "intra_node") continue;
      for (const auto& [node, members] : nodes) {
        CompareItem n = item;
        n.where = node_text(node);
        n.group = n.where + ": " + key.op + " intra_node";
        n.label = n.size + (key.mode == "in_place" ? " in place" : "");
        n.result = CompareItem::Result::kNotJudged;
        judge(n, iteration_durations(tb, sb->world, members.first),
              iteration_durations(ta, sa->world, members.second));
        c.items.push_back(n);
      }
    }
  }
  for (const auto& [key, sa] : after) {
    if (!before.count(key)) {
      c.only_in_after.push_back("collectives " + key.scope + " " + key.op + " " + key.leaf + " " +
                                key.mode);
    }
  }
}

// Rank r's times [iters], divided by each iteration's median over the ranks when `relative`.
std::vector<double> rank_column(const std::vector<double>& t, const std::vector<std::uint64_t>& d,
                                int r, const std::vector<double>* per_iteration) {
  std::vector<double> v;
  if (r < 0 || static_cast<std::uint64_t>(r) >= d[1]) return v;
  for (std::uint64_t i = 0; i < d[0]; ++i) {
    const double x = t[i * d[1] + static_cast<std::uint64_t>(r)];
    v.push_back(per_iteration ? x / (*per_iteration)[i] : x);
  }
  return v;
}

// Per shape: the run's GEMM time (each iteration's median over ranks), and each rank's time
// relative to the other ranks of its own run: a rank or node that changed against its peers is
// named even when the whole machine drifted between the runs (a busier host, another clock).
void compare_gemm(const RunFile& fb, const RunFile& fa, Judge& judge, Comparison& c) {
  const std::string g = "/gemm";
  if (!fb.has(g) && !fa.has(g)) return;
  const std::vector<std::string> sb = fb.has(g) ? fb.children(g) : std::vector<std::string>{};
  const std::vector<std::string> sa = fa.has(g) ? fa.children(g) : std::vector<std::string>{};
  const std::map<RankKey, int> kb = rank_keys(fb.ranks()), ka = rank_keys(fa.ranks());
  // A shape is matched by name and engine (cpu and cublaslt times are not one measurement).
  auto engine = [](const RunFile& f, const std::string& path) {
    const std::string e = attr_or(f, path, schema::gemm::kAttrEngine);
    return e.empty() ? attr_or(f, "/gemm", schema::gemm::kAttrEngine) : e;
  };
  for (const std::string& shape : sb) {
    const std::string path = g + "/" + shape;
    if (!fb.has(path, schema::gemm::kTimeUs)) continue;
    const bool in_after =
        std::find(sa.begin(), sa.end(), shape) != sa.end() && fa.has(path, schema::gemm::kTimeUs);
    const std::string eb = engine(fb, path), ea = in_after ? engine(fa, path) : "";
    if (!in_after || ea != eb) {
      auto name = [&](const std::string& e) {
        return "gemm " + shape + (e.empty() ? "" : " (" + e + ")");
      };
      c.only_in_before.push_back(name(eb));
      if (in_after) c.only_in_after.push_back(name(ea));
      continue;
    }
    std::vector<std::uint64_t> db, da;
    const std::vector<double> tb = fb.read(path, schema::gemm::kTimeUs, &db);
    const std::vector<double> ta = fa.read(path, schema::gemm::kTimeUs, &da);
    if (db.size() != 2 || da.size() != 2) continue;
    const std::vector<double> mb = row_medians(tb, db[1]), ma = row_medians(ta, da[1]);
    CompareItem run;
    run.phase = "gemm";
    run.what = shape;
    run.group = "gemm (median rank)";
    judge(run, mb, ma);
    c.items.push_back(run);
    for (const auto& [k, rb] : kb) {
      const auto other = ka.find(k);
      if (other == ka.end()) continue;
      CompareItem item;
      item.phase = "gemm";
      item.what = shape;
      item.where = "rank " + std::to_string(other->second) + " (host " + k.host + ", node " +
                   std::to_string(k.node) + ")";
      item.label = shape;
      item.group = item.where + ": gemm against its run's other ranks";
      item.unit = kRelativeUnit;
      judge(item, rank_column(tb, db, rb, &mb), rank_column(ta, da, other->second, &ma));
      c.items.push_back(item);
    }
  }
  for (const std::string& shape : sa) {
    if (std::find(sb.begin(), sb.end(), shape) == sb.end()) {
      c.only_in_after.push_back("gemm " + shape);
    }
  }
}

// Per step (row) of [steps, world]: the median over the ranks present, or the largest.
std::vector<double> per_step(const std::vector<double>& t, std::size_t world, bool largest) {
  return largest ? iteration_durations(t, world) : row_medians(t, world);
}

// train: per component the run's value per measured step; per rank its compute (forward +
// backward) against its run's median rank, matched by host, node and local rank.
void compare_train(const RunFile& fb, const RunFile& fa, Judge& judge, Comparison& c) {
  namespace t = schema::training;
  const std::string g = schema::kTrainGroup;
  const bool hb = fb.has(g, t::kStepMs), ha = fa.has(g, t::kStepMs);
  if (!hb || !ha) {
    if (hb) c.only_in_before.push_back("train");
    if (ha) c.only_in_after.push_back("train");
    return;
  }
  struct Component {
    const schema::Dataset<double>* d;
    const char* name;
    bool largest;  // the step lasts until its slowest rank; components: the median rank
  };
  const Component components[] = {{&t::kStepMs, "step", true},
                                  {&t::kFwdMs, "forward", false},
                                  {&t::kBwdMs, "backward", false},
                                  {&t::kTpCommMs, "tp communication", false},
                                  {&t::kDpExposedMs, "exposed dp communication", false},
                                  {&t::kOptimMs, "optimizer", false}};
  const std::size_t wb = fb.ranks().size(), wa = fa.ranks().size();
  if (wb == 0 || wa == 0) return;
  // A part neither run had (tp 1: no TP communication; dp 1: no DP reduction) is no item.
  const auto both_one = [&](const char* attr) {
    return fb.has_attr(g, attr) && fa.has_attr(g, attr) && fb.attr_int64(g, attr) == 1 &&
           fa.attr_int64(g, attr) == 1;
  };
  for (const Component& k : components) {
    if (!fb.has(g, *k.d) || !fa.has(g, *k.d)) continue;
    if ((k.d == &t::kTpCommMs && both_one(t::kAttrTp)) ||
        (k.d == &t::kDpExposedMs && both_one(t::kAttrDp))) {
      continue;
    }
    CompareItem item;
    item.phase = "train";
    item.what = k.name;
    item.unit = "ms";
    item.group =
        std::string("train ") + k.name + (k.largest ? " (slowest rank)" : " (median rank)");
    judge(item, per_step(fb.read(g, *k.d), wb, k.largest),
          per_step(fa.read(g, *k.d), wa, k.largest));
    c.items.push_back(item);
  }
  // Compute per rank against its run's median rank.
  auto compute = [&](const RunFile& f, std::size_t world) {
    std::vector<double> fwd = f.read(g, t::kFwdMs);
    const std::vector<double> bwd = f.read(g, t::kBwdMs);
    for (std::size_t i = 0; i < fwd.size() && i < bwd.size(); ++i) fwd[i] += bwd[i];
    return std::pair{fwd, std::vector<std::uint64_t>{fwd.size() / world, world}};
  };
  const auto [cb, db] = compute(fb, wb);
  const auto [ca, da] = compute(fa, wa);
  const std::vector<double> mb = row_medians(cb, db[1]), ma = row_medians(ca, da[1]);
  const std::map<RankKey, int> kb = rank_keys(fb.ranks()), ka = rank_keys(fa.ranks());
  for (const auto& [k, rb] : kb) {
    const auto other = ka.find(k);
    if (other == ka.end()) continue;
    CompareItem item;
    item.phase = "train";
    item.what = "compute (forward + backward)";
    item.unit = kRelativeUnit;
    item.where = "rank " + std::to_string(other->second) + " (host " + k.host + ", node " +
                 std::to_string(k.node) + ")";
    item.label = "train compute";
    item.group = item.where + ": train compute against its run's other ranks";
    judge(item, rank_column(cb, db, rb, &mb), rank_column(ca, da, other->second, &ma));
    c.items.push_back(item);
  }
}

// checkpoint: per iteration the aggregate write and restore time (latest end - earliest start).
void compare_checkpoint(const RunFile& fb, const RunFile& fa, Judge& judge, Comparison& c) {
  namespace k = schema::checkpoint;
  const std::string g = schema::kCheckpointGroup;
  const bool hb = fb.has(g, k::kWriteEndS), ha = fa.has(g, k::kWriteEndS);
  auto layout = [&](const RunFile& f) {
    return f.attr_string(g, k::kAttrApi) + " " + f.attr_string(g, k::kAttrLayout);
  };
  const std::string lb = hb ? layout(fb) : "", la = ha ? layout(fa) : "";
  if (!hb || !ha || lb != la) {
    if (hb) c.only_in_before.push_back("checkpoint " + lb);
    if (ha) c.only_in_after.push_back("checkpoint " + la);
    return;
  }
  // Per iteration, latest end - earliest start over the ranks (seconds).
  auto spans = [&](const RunFile& f, const schema::Dataset<double>& start,
                   const schema::Dataset<double>& end) {
    std::vector<std::uint64_t> d;
    const std::vector<double> s = f.read(g, start, &d), e = f.read(g, end);
    std::vector<double> out;
    if (d.size() != 2 || e.size() != s.size()) return out;
    for (std::uint64_t i = 0; i < d[0]; ++i) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (std::uint64_t r = 0; r < d[1]; ++r) {
        const double a = s[i * d[1] + r], b = e[i * d[1] + r];
        if (std::isfinite(a) && std::isfinite(b)) {
          lo = std::min(lo, a);
          hi = std::max(hi, b);
        }
      }
      out.push_back(hi >= lo ? hi - lo : std::nan(""));
    }
    return out;
  };
  const std::pair<const char*,
                  std::pair<const schema::Dataset<double>*, const schema::Dataset<double>*>>
      ops[] = {{"write", {&k::kWriteStartS, &k::kWriteEndS}},
               {"restore", {&k::kReadStartS, &k::kReadEndS}}};
  for (const auto& [op, ds] : ops) {
    if (!fb.has(g, *ds.first) || !fa.has(g, *ds.first)) continue;
    CompareItem item;
    item.phase = "checkpoint";
    item.what = std::string(op) + " (" + lb + ", all ranks)";
    item.unit = "s";
    item.group = "checkpoint " + std::string(op);
    judge(item, spans(fb, *ds.first, *ds.second), spans(fa, *ds.first, *ds.second));
    c.items.push_back(item);
  }
}

// The link scan, per rail and node: each node's first-pass windows with all its partners (the
// time of one window, ms), nodes matched by index and host. A node whose NIC, cable or port got
// slower shows in most of its pairs; a single link is left to each run's own linkscan.links
// check (one pair's few windows, corrected over every item, could not reach alpha).
void compare_linkscan(const RunFile& fb, const RunFile& fa, const RunFacts& facts_b,
                      const RunFacts& facts_a, Judge& judge, Comparison& c) {
  const bool hb = fb.has(schema::kLinkscanGroup), ha = fa.has(schema::kLinkscanGroup);
  if (!hb || !ha) {
    if (hb) c.only_in_before.push_back("linkscan");
    if (ha) c.only_in_after.push_back("linkscan");
    return;
  }
  const LinkscanFindings lb = linkscan_findings(fb, facts_b), la = linkscan_findings(fa, facts_a);
  if (lb.bytes != la.bytes || lb.window != la.window || lb.bidirectional != la.bidirectional ||
      lb.transport != la.transport) {
    c.not_compared.push_back("linkscan (the runs moved other windows: " +
                             format_size(static_cast<std::uint64_t>(lb.bytes)) + " x " +
                             std::to_string(lb.window) + " over " + lb.transport + " -> " +
                             format_size(static_cast<std::uint64_t>(la.bytes)) + " x " +
                             std::to_string(la.window) + " over " + la.transport + ")");
    return;
  }
  // Per node name, the ms of every first-pass window of its pairs.
  const auto windows = [](const LinkscanFindings& lf, const LinkscanRail& r,
                          const RunFacts& facts) {
    const double bytes = lf.bytes * lf.window * (lf.bidirectional ? 2 : 1);
    std::map<std::string, std::vector<double>> out;
    for (const LinkscanPair& p : r.pairs) {
      if (p.pass != 1) continue;
      for (int end : {p.pair.a, p.pair.b}) {
        std::vector<double>& v = out[facts.node_name(r.nodes[static_cast<std::size_t>(end)])];
        for (double bw : p.bw_GBps) {
          if (bw > 0) v.push_back(bytes / (bw * 1e9) * 1e3);
        }
      }
    }
    return out;
  };
  for (const LinkscanRail& rb : lb.rails) {
    const auto other = std::find_if(la.rails.begin(), la.rails.end(),
                                    [&](const LinkscanRail& r) { return r.rail == rb.rail; });
    const std::string rail = "rail " + std::to_string(rb.rail);
    if (other == la.rails.end()) {
      c.only_in_before.push_back("linkscan " + rail);
      continue;
    }
    const auto before = windows(lb, rb, facts_b), after = windows(la, *other, facts_a);
    for (const auto& [node, samples] : before) {
      const auto match = after.find(node);
      if (match == after.end()) {
        c.only_in_before.push_back("linkscan " + rail + " " + node);
        continue;
      }
      CompareItem item;
      item.phase = "linkscan";
      item.what = rail + " window with every partner";
      item.where = node;
      item.label = rail;
      item.group = node + ": linkscan";
      item.unit = "ms";
      judge(item, samples, match->second);
      c.items.push_back(item);
    }
    for (const auto& [node, samples] : after) {
      if (before.count(node) == 0) c.only_in_after.push_back("linkscan " + rail + " " + node);
    }
  }
  for (const LinkscanRail& ra : la.rails) {
    if (std::none_of(lb.rails.begin(), lb.rails.end(),
                     [&](const LinkscanRail& r) { return r.rail == ra.rail; })) {
      c.only_in_after.push_back("linkscan rail " + std::to_string(ra.rail));
    }
  }
}

std::string pct(double ratio) {
  return fixed_text(100 * std::fabs(ratio - 1), ratio >= 0.9995 && ratio < 1.1 ? 1 : 0) + "%";
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& compared_phases() {
  static const std::vector<std::pair<std::string, std::string>> kPhases = {
      {"collectives", schema::kCollectivesGroup},
      {"gemm", schema::kGemmGroup},
      {"train", schema::kTrainGroup},
      {"checkpoint", schema::kCheckpointGroup},
      {"linkscan", schema::kLinkscanGroup},
  };
  return kPhases;
}

std::string not_judged_reasons(const Comparison& c) {
  std::map<std::string, std::size_t> why;
  for (const CompareItem& i : c.items) {
    if (i.result == CompareItem::Result::kNotJudged) ++why[i.not_judged_why];
  }
  std::vector<std::string> parts;
  for (const auto& [reason, n] : why) parts.push_back(std::to_string(n) + " " + reason);
  return join(parts, "; ");
}

const char* Comparison::verdict_name() const {
  return regressed() ? "regressed" : nothing_judged() ? "nothing_judged" : "no_regression";
}

const char* Comparison::verdict_words() const {
  return regressed() ? "REGRESSED" : nothing_judged() ? "NOTHING JUDGED" : "NO REGRESSION";
}

const char* result_name(CompareItem::Result r) {
  switch (r) {
    case CompareItem::Result::kSlower:
      return "slower";
    case CompareItem::Result::kFaster:
      return "faster";
    case CompareItem::Result::kSame:
      return "unchanged";
    case CompareItem::Result::kNotJudged:
      return "not_judged";
  }
  return "";
}

const char* result_name(CompareGroup::Result r) {
  switch (r) {
    case CompareGroup::Result::kSlower:
      return "slower";
    case CompareGroup::Result::kFaster:
      return "faster";
    case CompareGroup::Result::kSame:
      return "unchanged";
  }
  return "";
}

// The smallest change counted when either run's ranks share cores.
constexpr double kSharedCoreMinEffect = 0.5;

Comparison compare_runs(const RunFile& before, const RunFile& after, const CompareOptions& o) {
  Comparison c;
  c.before_path = before.path().string();
  c.after_path = after.path().string();
  c.alpha = o.alpha;
  c.min_effect = o.min_effect;
  const RunFacts facts = read_run_facts(before);
  const RunFacts after_facts = read_run_facts(after);
  c.min_effect_per_rank =
      o.min_effect_per_rank >= 0 ? o.min_effect_per_rank : facts.straggler_slowdown();
  // Ranks sharing cores: between two runs the whole machine's level moves with what else runs on
  // it (back-to-back reruns of 4 ranks on 2 cores: 25-35% most of the time, 1.8x in a CI run's
  // slow spell, 3-4x in this VM's slowest), so no threshold on absolute times holds: they are
  // not judged, as for a sanitizer build. Which ranks share a core changes too, so a rank's place
  // among its peers is held to kSharedCoreMinEffect at least.
  std::string absolute_not_judged;
  if (facts.oversubscribed || after_facts.oversubscribed) {
    c.min_effect = std::max({c.min_effect, c.min_effect_per_rank, kSharedCoreMinEffect});
    c.min_effect_per_rank = std::max(c.min_effect_per_rank, kSharedCoreMinEffect);
    c.warnings.push_back(std::string(facts.oversubscribed ? "the baseline's" : "the run's") +
                         " ranks share cores: absolute times are not judged (between runs on "
                         "shared cores the machine's level moves 25% to 4x), a rank against its "
                         "run's others only by changes over " +
                         fixed_text(100 * c.min_effect_per_rank, 0) + "%");
    absolute_not_judged = "absolute time with ranks sharing cores";
  }
  if (before.schema_version() != after.schema_version()) {
    throw UsageError("compare: " + c.before_path + " has schema " +
                     std::to_string(before.schema_version()) + ", " + c.after_path + " schema " +
                     std::to_string(after.schema_version()) +
                     ": compare files of one shakedown version (or rerun the baseline)");
  }
  const RunMeta mb = before.meta(), ma = after.meta();
  if (mb.shakedown_version != ma.shakedown_version) {
    c.warnings.push_back("shakedown versions differ: " + mb.shakedown_version + " -> " +
                         ma.shakedown_version);
  }
  if (mb.world_size != ma.world_size || mb.node_count != ma.node_count) {
    c.warnings.push_back("layouts differ: " + std::to_string(mb.world_size) + " ranks on " +
                         std::to_string(mb.node_count) + " nodes -> " +
                         std::to_string(ma.world_size) + " on " + std::to_string(ma.node_count) +
                         " (ranks are matched by host, node and local rank)");
  }
  for (const std::string& d : config_differences(mb.config_yaml, ma.config_yaml)) {
    c.warnings.push_back("config " + d);
  }
  // A run cut short measured part of what it was asked: what it did not is only in one file, or
  // in neither, and is not compared. Said first, before any number.
  for (const auto& [file, meta, path] :
       {std::tuple{&before, &mb, c.before_path}, std::tuple{&after, &ma, c.after_path}}) {
    if (meta->status == schema::kStatusComplete) continue;
    c.cut_short = true;
    std::string why;
    if (meta->status == schema::kStatusAborted) {
      why = "was aborted" +
            (meta->abort_phase.empty() ? std::string() : " in the " + meta->abort_phase + " phase");
      if (file->has_attr("/", schema::kAttrAbortReason)) {
        std::string reason = file->attr_string("/", schema::kAttrAbortReason);
        if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
        why += " (" + reason + ")";
      }
    } else {
      why = "did not finish (status " + meta->status + ": the job ended before closing its file)";
    }
    c.warnings.insert(c.warnings.begin(),
                      path + " " + why + ": what it did not measure is not compared");
  }
  // A sanitizer build's times are several times slower and move between runs (the verdict does
  // not hold them to a platform's numbers either): only ranks against their run's others count.
  for (const RunFacts* f : {&facts, &after_facts}) {
    if (f->sanitizers.empty()) continue;
    c.warnings.push_back((f == &facts ? c.before_path : c.after_path) +
                         " was written by a sanitizer build (" + f->sanitizers +
                         "): absolute times are not judged, only ranks against their run's "
                         "other ranks");
    absolute_not_judged = "absolute time of a sanitizer build";
  }
  Judge judge(o, absolute_not_judged);
  compare_collectives(before, after, judge, c);
  compare_gemm(before, after, judge, c);
  compare_train(before, after, judge, c);
  compare_checkpoint(before, after, judge, c);
  compare_linkscan(before, after, facts, after_facts, judge, c);
  if (before.has(schema::kDevicesGroup) || after.has(schema::kDevicesGroup)) {
    c.not_compared.push_back(
        "devices (not compared by this version: each run's devices.* checks judge it)");
  }
  if (c.items.empty()) {
    throw UsageError(
        "compare: " + c.before_path + " and " + c.after_path +
        " have no measurement in common (collectives sizes, GEMM shapes, train "
        "steps, checkpoint layout or link-scan nodes)" +
        (c.not_compared.empty() ? "" : "; not compared: " + join(c.not_compared, "; ")));
  }
  // Bonferroni holds each item to alpha / (items judged). An item whose samples cannot reach
  // that even in the best case (5 GEMM iterations against 5: p >= 0.0079, above 0.05 / 16) could
  // never count: it is not judged either, rather than called unchanged, and the others are held
  // to the correction over what is left. The items with the fewest samples (the largest best p)
  // go first, one sample size at a time, until the rest can all reach it. This looks only at
  // sample sizes, never at the data, so the correction stays valid.
  for (;;) {
    std::size_t judged = 0;
    double worst = -1e300;  // the largest log best p among the items judged
    for (const CompareItem& i : c.items) {
      if (i.result == CompareItem::Result::kNotJudged) continue;
      ++judged;
      worst = std::max(worst, log_best_p(i.n_before, i.n_after));
    }
    if (judged == 0 || worst < std::log(o.alpha / static_cast<double>(judged))) break;
    for (CompareItem& i : c.items) {
      if (i.result != CompareItem::Result::kNotJudged &&
          log_best_p(i.n_before, i.n_after) >= worst) {
        i.result = CompareItem::Result::kNotJudged;
        i.not_judged_why = kTooFewSamples;
      }
    }
  }
  for (const CompareItem& i : c.items) {
    if (i.result == CompareItem::Result::kNotJudged) {
      ++c.not_judged;
    } else {
      ++c.judged;
    }
  }
  // Bonferroni over the items judged.
  c.alpha_per_item = c.judged > 0 ? o.alpha / static_cast<double>(c.judged) : o.alpha;
  std::map<std::string, CompareGroup> groups;
  std::map<std::string, std::vector<const CompareItem*>> members;
  for (CompareItem& i : c.items) {
    if (i.result == CompareItem::Result::kNotJudged) continue;
    CompareGroup& g = groups[i.group];
    g.name = i.group;
    g.phase = i.phase;
    g.per_place = !i.where.empty();
    ++g.judged;
    // Per-rank and per-node items are held to the straggler rule's slowdown as well (on shared
    // cores a rank's level moves between runs with where the scheduler put it).
    const double effect =
        i.where.empty() ? c.min_effect : std::max(c.min_effect, c.min_effect_per_rank);
    if (i.p < c.alpha_per_item && i.ratio >= 1 + effect) {
      i.result = CompareItem::Result::kSlower;
      ++c.slower;
      ++g.slower;
    } else if (i.p < c.alpha_per_item && i.ratio <= 1 / (1 + effect)) {
      i.result = CompareItem::Result::kFaster;
      ++c.faster;
      ++g.faster;
    }
    g.not_slower += i.hi < 1 + effect ? 1 : 0;
    g.not_faster += i.lo > 1 / (1 + effect) ? 1 : 0;
    members[i.group].push_back(&i);
  }
  // A group changed when enough of its items did: a node or rank (and the run's GEMM over its
  // few shapes) in at least 2 items (1 where it has 1) and in more items than rule the change
  // out, as the straggler rule asks most of the cases that tell; items too noisy to tell either
  // way count for neither (a rank slowed 2x in gemm showed it in 2 shapes, 2 more were too noisy
  // and its train compute was unchanged: "most of its 5 items" called it unchanged). A
  // collective in at least 2 sizes (a fabric problem often shows only from some size on).
  auto changed = [](const CompareGroup& g, std::size_t n, std::size_t against) {
    if (g.per_place || g.phase == "gemm") {
      return n >= std::min<std::size_t>(2, g.judged) && n > against;
    }
    return n >= std::min<std::size_t>(2, g.judged);
  };
  std::vector<std::pair<double, CompareGroup>> slower, faster, same;
  for (auto& [name, g] : groups) {
    const bool is_slower = changed(g, g.slower, g.not_slower);
    const bool is_faster = !is_slower && changed(g, g.faster, g.not_faster);
    g.result = is_slower   ? CompareGroup::Result::kSlower
               : is_faster ? CompareGroup::Result::kFaster
                           : CompareGroup::Result::kSame;
    const CompareItem::Result want = is_slower   ? CompareItem::Result::kSlower
                                     : is_faster ? CompareItem::Result::kFaster
                                                 : CompareItem::Result::kSame;
    std::vector<double> ratios;
    for (const CompareItem* i : members[name]) {
      if (want != CompareItem::Result::kSame && i->result != want) continue;
      ratios.push_back(i->ratio);
      g.p = std::min(g.p, i->p);
      if (want != CompareItem::Result::kSame) {
        g.changed.push_back(!i->label.empty() ? i->label : i->size.empty() ? i->what : i->size);
      }
    }
    g.ratio = median(ratios);
    if (want != CompareItem::Result::kSame) {
      const std::size_t shown = std::min<std::size_t>(g.changed.size(), 6);
      g.line = name + ": " + pct(g.ratio) + (is_slower ? " slower" : " faster") +
               " (median ratio " + general_text(g.ratio, 3) + ") in " +
               std::to_string(g.changed.size()) + "/" + std::to_string(g.judged) + " (" +
               join(std::vector<std::string>(g.changed.begin(), g.changed.begin() + shown), ", ") +
               (g.changed.size() > shown ? ", ..." : "") + "), smallest " + p_text(g.p, -6);
    }
    // Worst first: the size of the change times the number of items it shows in.
    const double weight = std::fabs(std::log(g.ratio)) * static_cast<double>(g.changed.size());
    (is_slower ? slower : is_faster ? faster : same).emplace_back(weight, std::move(g));
  }
  for (auto* list : {&slower, &faster, &same}) {
    std::stable_sort(list->begin(), list->end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (auto& [w, g] : *list) {
      c.slower_groups += g.result == CompareGroup::Result::kSlower;
      c.faster_groups += g.result == CompareGroup::Result::kFaster;
      c.groups.push_back(std::move(g));
    }
  }
  return c;
}

std::string format_comparison(const Comparison& c, bool detail) {
  std::ostringstream os;
  os << "shakedown compare\n  before: " << c.before_path << "\n  after:  " << c.after_path << '\n';
  for (const std::string& w : c.warnings) os << "  ! " << w << '\n';
  os << '\n';
  // c.groups holds the slower places first (worst first), then the faster ones.
  for (const auto& [result, title] :
       {std::pair{CompareGroup::Result::kSlower, "slower (beyond noise)"},
        std::pair{CompareGroup::Result::kFaster, "faster (beyond noise)"}}) {
    bool any = false;
    for (const CompareGroup& g : c.groups) {
      if (g.result != result) continue;
      if (!any) os << title << '\n';
      any = true;
      os << "  " << g.line << '\n';
    }
    if (any) os << '\n';
  }
  if (detail) {
    os << "items (ratio after/before with its " << fixed_text(100 * (1 - c.alpha), 0)
       << "% interval, two-sided Mann-Whitney p)\n";
    for (const CompareItem& i : c.items) {
      os << "  " << i.phase << " " << i.what << (i.size.empty() ? "" : " " + i.size)
         << (i.where.empty() ? "" : " " + i.where) << ": ";
      if (i.result == CompareItem::Result::kNotJudged) {
        os << "not judged (" << i.n_before << " and " << i.n_after
           << " samples: " << i.not_judged_why << ")\n";
        continue;
      }
      os << general_text(i.ratio, 3) << " [" << general_text(i.lo, 3) << ", "
         << general_text(i.hi, 3) << "], " << p_text(i.p, -6) << " ("
         << general_text(i.before_us, 4) << " -> " << general_text(i.after_us, 4) << " " << i.unit
         << ")";
      if (i.result == CompareItem::Result::kSlower) os << " SLOWER";
      if (i.result == CompareItem::Result::kFaster) os << " faster";
      os << '\n';
    }
    os << '\n';
  }
  if (!c.only_in_before.empty()) {
    os << "only in before: " << c.only_in_before.size() << " ("
       << join(std::vector<std::string>(
                   c.only_in_before.begin(),
                   c.only_in_before.begin() + std::min<std::size_t>(c.only_in_before.size(), 5)),
               ", ")
       << (c.only_in_before.size() > 5 ? ", ..." : "") << ")\n";
  }
  if (!c.only_in_after.empty()) {
    os << "only in after: " << c.only_in_after.size() << " ("
       << join(std::vector<std::string>(
                   c.only_in_after.begin(),
                   c.only_in_after.begin() + std::min<std::size_t>(c.only_in_after.size(), 5)),
               ", ")
       << (c.only_in_after.size() > 5 ? ", ..." : "") << ")\n";
  }
  for (const std::string& n : c.not_compared) os << "not compared: " << n << '\n';
  os << "compared " << c.judged << " item(s) at alpha " << general_text(c.alpha, 2)
     << " Bonferroni-corrected (" << general_text(c.alpha_per_item, 2) << " each), changes under "
     << fixed_text(100 * c.min_effect, 0) << "% ("
     << fixed_text(100 * std::max(c.min_effect, c.min_effect_per_rank), 0)
     << "% for a rank against its run's others) ignored: " << c.slower << " slower, " << c.faster
     << " faster, " << c.judged - c.slower - c.faster << " unchanged";
  if (c.not_judged > 0)
    os << "; " << c.not_judged << " not judged (" << not_judged_reasons(c) << ")";
  os << "\n"
     << c.slower_groups << " place(s) slower, " << c.faster_groups
     << " faster (a rank, node or the run's GEMM in at least 2 items (1 where it has 1) and in "
        "more than rule the "
        "change out, a collective in at least 2 sizes)\n";
  os << "verdict: " << c.verdict_words();
  if (c.nothing_judged()) {
    os << ": none of the " << c.items.size()
       << " item(s) both runs measured could be judged (see above); "
       << (c.cut_short ? "one of the runs was cut short (see its line at the top); " : "")
       << "compare runs with more iterations, or on ranks that do not share cores";
  }
  os << " (exit " << c.exit_code() << ")\n";
  return os.str();
}

}  // namespace shakedown
