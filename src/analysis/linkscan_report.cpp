#include "analysis/linkscan_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "config/load.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

namespace l = schema::linkscan;
using fabric::NodePair;

std::string usec(double v) {
  return general_text(v, 3) + " us";
}

LinkscanRail read_rail(const RunFile& f, const std::string& path, int reps) {
  LinkscanRail rail;
  rail.rail = static_cast<int>(f.attr_int64(path, l::kAttrRail));
  rail.net_devices = f.attr_string(path, l::kAttrNetDevices);
  rail.skipped = f.attr_string(path, l::kAttrSkipped);
  rail.budget = static_cast<int>(f.attr_int64(path, l::kAttrRetestBudget));
  if (f.has_attr(path, l::kAttrPasses)) {
    rail.passes = static_cast<int>(f.attr_int64(path, l::kAttrPasses));
  }
  for (std::int64_t n : f.read(path, l::kNodes)) rail.nodes.push_back(static_cast<int>(n));
  for (std::int64_t r : f.read(path, l::kRanks)) rail.ranks.push_back(static_cast<int>(r));
  if (!f.has(path, l::kPairs)) return rail;
  const std::vector<std::int64_t> ab = f.read(path, l::kPairs);
  const std::vector<std::int64_t> pass = f.read(path, l::kPass);
  const std::vector<std::int64_t> round = f.read(path, l::kRound);
  std::vector<std::uint64_t> dims;
  const std::vector<double> bw = f.read(path, l::kBwGBps, &dims);
  const std::vector<double> lat = f.read(path, l::kLatUs);
  const std::vector<double> p99 = f.read(path, l::kLatP99Us);
  const std::size_t width = dims.size() == 2 ? dims[1] : static_cast<std::size_t>(reps);
  std::map<std::string, std::string> transport;  // "a-b" -> what carried it (first line wins)
  const std::string transports = f.attr_string(path, l::kAttrTransports);
  for (std::string_view line : split(transports, '\n')) {
    const auto colon = line.find(": ");
    if (colon != std::string_view::npos) {
      transport.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
    }
  }
  const std::size_t p = pass.size();
  for (std::size_t i = 0; i < p && 2 * i + 1 < ab.size() && i < lat.size(); ++i) {
    LinkscanPair x;
    x.pair = {static_cast<int>(ab[2 * i]), static_cast<int>(ab[2 * i + 1])};
    x.pass = static_cast<int>(pass[i]);
    x.round = i < round.size() ? static_cast<int>(round[i]) : 0;
    for (std::size_t k = 0; k < width && i * width + k < bw.size(); ++k) {
      x.bw_GBps.push_back(bw[i * width + k]);
    }
    x.bw_median = median(x.bw_GBps);
    x.lat_us = lat[i];
    x.lat_p99_us = i < p99.size() ? p99[i] : std::nan("");
    const auto t = transport.find(std::to_string(x.pair.a) + "-" + std::to_string(x.pair.b));
    x.transport = t == transport.end() ? "" : t->second;
    if (x.pass == 1) ++rail.scanned;
    rail.pairs.push_back(std::move(x));
  }
  return rail;
}

// The localisation, as the run planned it, from the recorded numbers.
void localise_rail(LinkscanRail& rail, const fabric::Thresholds& t) {
  std::vector<fabric::PairResult> first;
  for (const LinkscanPair& p : rail.pairs) {
    if (p.pass == 1) first.push_back({p.pair, p.bw_median, p.lat_us});
  }
  const int n = static_cast<int>(rail.nodes.size());
  fabric::Judged judged = fabric::judge_pass(n, first, t);
  rail.reference = judged.reference;
  rail.reasons = std::move(judged.reasons);
  rail.suspects = std::move(judged.suspects);
  rail.plan = fabric::plan_retests(rail.suspects, 2, rail.budget);
  if (rail.passes < 2) {
    // The run stopped before the retests were recorded: the suspects stay suspects.
    const std::string why = "the run stopped before its retests";
    for (const int node : rail.suspects.nodes) {
      rail.localisation.nodes.push_back({node, fabric::Outcome::kUnresolved, {}, {}, why});
    }
    for (const NodePair& link : rail.suspects.links) {
      rail.localisation.links.push_back({link, fabric::Outcome::kUnresolved, why});
    }
    return;
  }
  // Each planned pair's first result in `pass` (fabric::results_in_order, as the phase does).
  const auto results = [&](const std::vector<NodePair>& planned, int pass) {
    std::vector<fabric::PairResult> measured;
    for (const LinkscanPair& p : rail.pairs) {
      if (p.pass == pass) measured.push_back({p.pair, p.bw_median, p.lat_us});
    }
    return fabric::results_in_order(planned, measured);
  };
  const std::vector<fabric::PairResult> retests = results(rail.plan.pairs, 2);
  rail.repeated = fabric::plan_repeats(rail.plan, retests, rail.reference, t, rail.budget);
  std::vector<NodePair> again;
  for (const std::size_t i : rail.repeated) again.push_back(rail.plan.pairs[i]);
  // A run file from before the repeats has no pass 3: its retests stand as they were.
  const bool repeats_recorded = std::any_of(rail.pairs.begin(), rail.pairs.end(),
                                            [](const LinkscanPair& p) { return p.pass == 3; });
  if (!repeats_recorded) rail.repeated.clear();
  const std::vector<fabric::PairResult> folded =
      fabric::with_repeats(retests, rail.repeated, results(again, 3), rail.reference, t);
  rail.localisation = fabric::localise(rail.suspects, rail.plan, folded, rail.reference, t);
}

// The first-pass numbers of the pairs touching scan position `pos` (what made it a suspect).
std::string node_evidence(const LinkscanRail& rail, int pos, const LinkscanFindings& lf) {
  std::vector<double> bw;
  std::size_t slow = 0, touching = 0;
  std::size_t i = 0;
  for (const LinkscanPair& p : rail.pairs) {
    if (p.pass != 1) continue;
    if (p.pair.a == pos || p.pair.b == pos) {
      ++touching;
      bw.push_back(p.bw_median);
      slow += rail.reasons[i] != 0 ? 1 : 0;
    }
    ++i;
  }
  const double m = median(bw);
  return "slow in " + std::to_string(slow) + " of its " + std::to_string(touching) +
         " scan pair(s), median " + gbps_text(m) + " = " +
         fixed_text(100 * m / rail.reference.best_bw_GBps, 0) + "% of the best pair's " +
         gbps_text(rail.reference.best_bw_GBps) + " (pass: " + fixed_text(100 * lf.bw_fraction, 0) +
         "%, " + (lf.widened.empty() ? std::string("linkscan.bw_fraction") : lf.widened) + ")";
}

// A conviction fails the run; on shared cores (oversubscribed, pretend nodes) the OS scheduler
// can slow a pair as much as a bad link, so there it is a warning. Unresolved: a warning.
CheckStatus status_of(fabric::Outcome o, const RunFacts& facts) {
  return o == fabric::Outcome::kConvicted && !facts.oversubscribed ? CheckStatus::kFail
                                                                   : CheckStatus::kWarn;
}

std::string partners_text(const LinkscanRail& rail, const std::vector<int>& positions,
                          const RunFacts& facts) {
  std::vector<std::string> names;
  for (int p : positions) names.push_back(facts.node_name(rail.nodes[static_cast<std::size_t>(p)]));
  return join(names, ", ");
}

void rail_checks(const LinkscanRail& rail, const LinkscanFindings& lf, const RunFacts& facts,
                 std::vector<Finding>& out) {
  const std::string on = lf.rails.size() > 1 ? " on rail " + std::to_string(rail.rail) : "";
  const auto node_of = [&](int pos) { return rail.nodes[static_cast<std::size_t>(pos)]; };
  for (const fabric::NodeFinding& f : rail.localisation.nodes) {
    const int node = node_of(f.node);
    if (f.outcome == fabric::Outcome::kAcquitted) continue;
    Finding x = run_finding("linkscan.nodes", status_of(f.outcome, facts), "");
    x.subject_kind = "node";
    x.subject = "node " + std::to_string(node);
    x.node = node;
    x.unit = "GB/s";
    x.expected = lf.bw_fraction * rail.reference.best_bw_GBps;
    x.evidence = node_evidence(rail, f.node, lf);
    if (f.outcome == fabric::Outcome::kConvicted) {
      x.host = facts.host_of_node(node);
      x.message = facts.node_name(node) + " is slow with every partner" + on + ": " + x.evidence +
                  "; retested, slow again with " + std::to_string(f.failed_with.size()) +
                  " good partner(s) (" + partners_text(rail, f.failed_with, facts) +
                  "): its NIC, cable or port";
    } else {
      x.message = facts.node_name(node) + " was slow with several partners" + on + " (" +
                  x.evidence + ") but not convicted: " + f.why;
    }
    out.push_back(std::move(x));
  }
  for (const fabric::LinkFinding& f : rail.localisation.links) {
    if (f.outcome == fabric::Outcome::kAcquitted) continue;
    const int a = node_of(f.pair.a), b = node_of(f.pair.b);
    double bw = std::nan("");
    for (const LinkscanPair& p : rail.pairs) {
      if (p.pass == 1 && p.pair == f.pair) bw = p.bw_median;
    }
    Finding x = run_finding("linkscan.links", status_of(f.outcome, facts), "");
    x.subject_kind = "link";
    x.subject = "node " + std::to_string(a) + " - node " + std::to_string(b);
    x.value = bw;
    x.expected = lf.bw_fraction * rail.reference.best_bw_GBps;
    x.unit = "GB/s";
    x.evidence = gbps_text(bw) + " = " + fixed_text(100 * bw / rail.reference.best_bw_GBps, 0) +
                 "% of the best pair's " + gbps_text(rail.reference.best_bw_GBps);
    x.message = "the link between " + facts.node_name(a) + " and " + facts.node_name(b) + on +
                (f.outcome == fabric::Outcome::kConvicted
                     ? " is slow (" + x.evidence +
                           ") while both nodes are fine with good partners: the path between "
                           "them (a cable, a switch port or a route)"
                     : " was slow (" + x.evidence + ") but not convicted: " + f.why);
    out.push_back(std::move(x));
  }
}

// Pairs carried by something else than most of the rail's pairs.
void transport_checks(const LinkscanRail& rail, const LinkscanFindings& lf, const RunFacts& facts,
                      std::vector<Finding>& out, std::size_t& known) {
  std::map<std::string, std::size_t> count;
  for (const LinkscanPair& p : rail.pairs) {
    if (p.pass == 1 && !p.transport.empty() && p.transport != "?") ++count[p.transport];
  }
  if (count.empty()) return;
  const auto common = std::max_element(
      count.begin(), count.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  const std::string on = lf.rails.size() > 1 ? " on rail " + std::to_string(rail.rail) : "";
  for (const LinkscanPair& p : rail.pairs) {
    if (p.pass != 1 || p.transport.empty() || p.transport == "?") continue;
    ++known;
    if (p.transport == common->first || count.size() == 1) continue;
    const int a = rail.nodes[static_cast<std::size_t>(p.pair.a)];
    const int b = rail.nodes[static_cast<std::size_t>(p.pair.b)];
    Finding x = run_finding("linkscan.transport", CheckStatus::kFail, "");
    x.subject_kind = "link";
    x.subject = "node " + std::to_string(a) + " - node " + std::to_string(b);
    x.evidence = p.transport + " vs " + common->first + " on " + std::to_string(common->second) +
                 " other pair(s)";
    x.message = facts.node_name(a) + " and " + facts.node_name(b) + on + " talked over " +
                p.transport + " where " + std::to_string(common->second) + " other pair(s) used " +
                common->first + ": a fallback (a port down, a missing device or UCX_TLS)";
    out.push_back(std::move(x));
  }
}

}  // namespace

LinkscanFindings linkscan_findings(const RunFile& file, const RunFacts& facts) {
  LinkscanFindings lf;
  if (!file.has(schema::kLinkscanGroup)) {
    if (facts.asked_for("linkscan")) lf.findings.push_back(not_recorded(facts, "linkscan"));
    return lf;
  }
  lf.ran = true;
  const std::string g = schema::kLinkscanGroup;
  lf.transport = file.attr_string(g, l::kAttrTransport);
  lf.schedule = file.attr_string(g, l::kAttrSchedule);
  lf.rails_setting = file.attr_string(g, l::kAttrRails);
  lf.bytes = static_cast<double>(file.attr_int64(g, l::kAttrBytes));
  lf.window = static_cast<int>(file.attr_int64(g, l::kAttrWindow));
  lf.reps = static_cast<int>(file.attr_int64(g, l::kAttrReps));
  lf.lat_bytes = static_cast<double>(file.attr_int64(g, l::kAttrLatBytes));
  lf.lat_iters = static_cast<int>(file.attr_int64(g, l::kAttrLatIters));
  lf.bw_fraction = file.attr_double(g, l::kAttrBwFraction);
  lf.lat_factor = file.attr_double(g, l::kAttrLatFactor);
  lf.concurrent = file.attr_int64(g, l::kAttrConcurrent) != 0;
  lf.bidirectional =
      file.has_attr(g, l::kAttrBidirectional) && file.attr_int64(g, l::kAttrBidirectional) != 0;
  if (file.has_attr(g, l::kAttrMemory)) lf.memory = file.attr_string(g, l::kAttrMemory);
  if (file.has_attr(g, l::kAttrMemoryNote))
    lf.memory_note = file.attr_string(g, l::kAttrMemoryNote);
  const LinkscanConfig& asked = facts.config.linkscan;
  if (lf.bw_fraction < asked.bw_fraction || lf.lat_factor > asked.lat_factor) {
    lf.widened = "linkscan.bw_fraction " + general_text(asked.bw_fraction, 3) +
                 " and linkscan.lat_factor " + general_text(asked.lat_factor, 3) +
                 " widened on shared cores by checks.straggler_slowdown_shared";
  }
  const fabric::Thresholds t{lf.bw_fraction, lf.lat_factor};
  for (const std::string& child : file.children(g)) {
    LinkscanRail rail = read_rail(file, schema::join(g, child), lf.reps);
    localise_rail(rail, t);
    lf.pairs_tested += rail.scanned;
    lf.nodes_tested = std::max(lf.nodes_tested, rail.nodes.size());
    lf.rails.push_back(std::move(rail));
  }
  std::sort(lf.rails.begin(), lf.rails.end(),
            [](const LinkscanRail& x, const LinkscanRail& y) { return x.rail < y.rail; });
  std::size_t scanned_rails = 0, retested = 0, repeated = 0, budget = 0, cut_short = 0;
  for (const LinkscanRail& r : lf.rails) {
    scanned_rails += r.scanned > 0 ? 1 : 0;
    cut_short += r.scanned > 0 && r.passes < 2 ? 1 : 0;
    retested += r.pairs.size() - r.scanned - r.repeated.size();
    repeated += r.repeated.size();
    budget += static_cast<std::size_t>(r.budget);
  }
  if (scanned_rails == 0) {
    const bool complete = facts.meta.status == schema::kStatusComplete;
    lf.findings.push_back(run_finding(
        "linkscan.coverage",
        complete && facts.meta.node_count > 1 ? CheckStatus::kFail : CheckStatus::kSkip,
        facts.meta.node_count <= 1
            ? "one node: the link scan tests pairs of nodes (add --virtual-nodes 2 to pretend "
              "several)"
            : "the link scan recorded no pair" +
                  (lf.rails.empty() ? std::string() : ": " + lf.rails.front().skipped)));
    return lf;
  }
  const std::string what = lf.schedule == "all_pairs" ? "every pair once" : "random rounds";
  std::string virtual_note;
  if (facts.meta.virtual_nodes > 0) {
    virtual_note =
        " (virtual nodes on one host: the links between them are shared memory, not "
        "the network)";
  }
  // Two nodes: one pair per rail, compared only with itself. Measured, but nothing judged: a
  // warning that says so, not a PASS of the scan (a link 10 times too slow would pass).
  std::string unjudged;
  if (lf.nodes_tested < 3) {
    std::vector<std::string> seen;
    for (const LinkscanRail& r : lf.rails) {
      if (r.scanned > 0 && std::isfinite(r.reference.best_bw_GBps)) {
        seen.push_back("rail " + std::to_string(r.rail) + " " +
                       gbps_text(r.reference.best_bw_GBps));
      }
    }
    unjudged =
        "; not judged: with 2 nodes each rail's one pair is compared only with itself, so "
        "a slow node or link cannot show" +
        (seen.empty() ? std::string() : " (measured: " + join(seen, ", ") + ")") +
        "; scan 3 nodes or more";
  }
  lf.findings.push_back(run_finding(
      "linkscan.coverage", unjudged.empty() ? CheckStatus::kPass : CheckStatus::kWarn,
      std::to_string(lf.pairs_tested) + " node pair(s) of " + std::to_string(lf.nodes_tested) +
          " node(s) on " + std::to_string(scanned_rails) + " rail(s) over " + lf.transport + " (" +
          what + "; " + format_size(static_cast<std::uint64_t>(lf.bytes)) + " x " +
          std::to_string(lf.window) + " in flight" + (lf.bidirectional ? " each way" : "") + ", " +
          std::to_string(lf.reps) + " window(s) and " + std::to_string(lf.lat_iters) +
          " round trips per pair" + (lf.concurrent ? "" : ", one pair at a time") + "; " +
          (lf.memory == "cuda" ? "GPU memory" : "host memory") +
          (lf.memory_note.empty() ? "" : " (" + lf.memory_note + ")") + "); " +
          std::to_string(retested) + " retest pair(s)" +
          (repeated > 0 ? " and " + std::to_string(repeated) + " failed retest(s) run again" : "") +
          " of a budget of " + std::to_string(budget) +
          (cut_short > 0
               ? "; the run stopped before the retests of " + std::to_string(cut_short) + " rail(s)"
               : "") +
          virtual_note + unjudged));
  std::vector<Finding> found;
  std::size_t acquitted = 0, known = 0;
  for (const LinkscanRail& r : lf.rails) {
    rail_checks(r, lf, facts, found);
    for (const auto& n : r.localisation.nodes)
      acquitted += n.outcome == fabric::Outcome::kAcquitted;
    for (const auto& k : r.localisation.links)
      acquitted += k.outcome == fabric::Outcome::kAcquitted;
  }
  const auto has_check = [&](const std::string& check) {
    return std::any_of(found.begin(), found.end(),
                       [&](const Finding& f) { return f.check == check; });
  };
  const std::string cleared =
      acquitted > 0 ? "; " + std::to_string(acquitted) + " suspect(s) passed their retests" : "";
  // Two nodes are one pair, compared only with itself: its bandwidth is the best, its latency
  // the lowest, and neither node has another partner to be good with. Nothing is localised.
  if (lf.nodes_tested < 3) {
    const std::string why = std::to_string(lf.nodes_tested) +
                            " node(s): one pair, compared only with itself, cannot be localised "
                            "to a node or a link (it takes 3 nodes or more)";
    if (!has_check("linkscan.nodes")) {
      found.push_back(run_finding("linkscan.nodes", CheckStatus::kSkip, why));
    }
    if (!has_check("linkscan.links")) {
      found.push_back(run_finding("linkscan.links", CheckStatus::kSkip, why));
    }
  }
  if (!has_check("linkscan.nodes")) {
    found.push_back(run_finding(
        "linkscan.nodes", CheckStatus::kPass,
        "no node slow with its partners (bandwidth under " + fixed_text(100 * lf.bw_fraction, 0) +
            "% of the best pair, or latency over " + general_text(lf.lat_factor, 3) +
            "x the lowest, with 2 good partners" + (lf.widened.empty() ? "" : "; " + lf.widened) +
            ")" + cleared));
  }
  if (!has_check("linkscan.links")) {
    found.push_back(run_finding("linkscan.links", CheckStatus::kPass,
                                "no link slow between nodes that are fine with others" + cleared));
  }
  std::vector<Finding> transport;
  for (const LinkscanRail& r : lf.rails) transport_checks(r, lf, facts, transport, known);
  if (transport.empty()) {
    std::set<std::string> used;
    for (const LinkscanRail& r : lf.rails) {
      for (const LinkscanPair& p : r.pairs) {
        if (p.pass == 1 && !p.transport.empty() && p.transport != "?") used.insert(p.transport);
      }
    }
    const std::string names = join(std::vector<std::string>(used.begin(), used.end()), "; ");
    transport.push_back(
        known == 0 ? run_finding("linkscan.transport", CheckStatus::kSkip,
                                 "the transports were not recorded")
        : lf.nodes_tested < 3
            ? run_finding("linkscan.transport", CheckStatus::kSkip,
                          "one pair per rail: no other pair to compare its transport with "
                          "(used: " +
                              names + ")")
            : run_finding("linkscan.transport", CheckStatus::kPass,
                          "every pair of a rail used the same transport (" + names + ")"));
  }
  lf.findings.insert(lf.findings.end(), found.begin(), found.end());
  lf.findings.insert(lf.findings.end(), transport.begin(), transport.end());
  return lf;
}

std::string linkscan_title(const LinkscanFindings& lf) {
  return "linkscan (" + lf.transport + (lf.memory == "cuda" ? " from GPU memory" : "") + ", " +
         lf.schedule + "; " + format_size(static_cast<std::uint64_t>(lf.bytes)) + " x " +
         std::to_string(lf.window) + " in flight" + (lf.bidirectional ? " each way" : "") + ", " +
         std::to_string(lf.reps) + " window(s) per pair; GB/s" +
         (lf.bidirectional ? " both directions together" : "") + ", median)";
}

std::vector<double> linkscan_matrix(const LinkscanRail& r) {
  const std::size_t n = r.nodes.size();
  std::vector<double> m(n * n, std::nan(""));
  for (const LinkscanPair& p : r.pairs) {
    if (p.pass != 1) continue;
    const auto a = static_cast<std::size_t>(p.pair.a), b = static_cast<std::size_t>(p.pair.b);
    if (a < n && b < n) m[a * n + b] = m[b * n + a] = p.bw_median;
  }
  return m;
}

std::vector<std::string> linkscan_outcomes(const LinkscanRail& r, const RunFacts& facts) {
  std::vector<std::string> out;
  for (const auto& f : r.localisation.nodes) {
    std::string line = facts.node_name(r.nodes[static_cast<std::size_t>(f.node)]) + ": " +
                       fabric::outcome_name(f.outcome);
    if (!f.failed_with.empty()) line += "; slow with " + partners_text(r, f.failed_with, facts);
    if (!f.passed_with.empty()) line += "; fine with " + partners_text(r, f.passed_with, facts);
    if (!f.why.empty()) line += " (" + f.why + ")";
    out.push_back(std::move(line));
  }
  for (const auto& f : r.localisation.links) {
    out.push_back("link " + facts.node_name(r.nodes[static_cast<std::size_t>(f.pair.a)]) + " - " +
                  facts.node_name(r.nodes[static_cast<std::size_t>(f.pair.b)]) + ": " +
                  fabric::outcome_name(f.outcome) + (f.why.empty() ? "" : " (" + f.why + ")"));
  }
  return out;
}

std::string format_linkscan(const LinkscanFindings& lf, const RunFacts& facts, bool detail) {
  if (!lf.ran) return "";
  std::ostringstream os;
  for (const LinkscanRail& r : lf.rails) {
    const std::string rail = "rail " + std::to_string(r.rail) +
                             (r.net_devices.empty() ? "" : " (" + r.net_devices + ")");
    if (r.scanned == 0) {
      os << "  " << rail << ": not scanned: " << r.skipped << '\n';
      continue;
    }
    double worst = std::nan("");
    for (const LinkscanPair& p : r.pairs) {
      if (p.pass == 1 && !(p.bw_median >= worst)) worst = p.bw_median;
    }
    std::vector<double> lats;
    for (const LinkscanPair& p : r.pairs) {
      if (p.pass == 1) lats.push_back(p.lat_us);
    }
    os << "  " << rail << ": " << r.scanned << " pair(s) of " << r.nodes.size() << " nodes, best "
       << gbps_text(r.reference.best_bw_GBps) << ", worst " << gbps_text(worst) << "; latency "
       << usec(r.reference.best_lat_us) << " lowest, " << usec(median(lats)) << " median";
    const std::size_t retests = r.pairs.size() - r.scanned - r.repeated.size();
    if (retests > 0) os << "; " << retests << " retest pair(s)";
    if (!r.repeated.empty()) os << ", " << r.repeated.size() << " run again";
    os << '\n';
    const std::size_t n = r.nodes.size();
    if (n <= 16 && (detail || n <= 8 || !r.suspects.nodes.empty() || !r.suspects.links.empty())) {
      const std::vector<double> m = linkscan_matrix(r);
      os << "    node ";
      for (std::size_t b = 0; b < n; ++b) {
        char head[16];
        std::snprintf(head, sizeof head, "%8d", r.nodes[b]);
        os << head;
      }
      os << '\n';
      for (std::size_t a = 0; a < n; ++a) {
        char lead[16];
        std::snprintf(lead, sizeof lead, "    %4d ", r.nodes[a]);
        os << lead;
        for (std::size_t b = 0; b < n; ++b) {
          char cell[16];
          std::snprintf(cell, sizeof cell, "%8s",
                        a == b ? "." : general_text(m[a * n + b], 3).c_str());
          os << cell;
        }
        os << '\n';
      }
    }
    for (const std::string& line : linkscan_outcomes(r, facts)) os << "    " << line << '\n';
    if (detail) {
      for (const LinkscanPair& p : r.pairs) {
        os << "    "
           << (p.pass == 1   ? "scan  "
               : p.pass == 2 ? "retest"
                             : "again ")
           << " round " << p.round << "  node " << r.nodes[static_cast<std::size_t>(p.pair.a)]
           << " - node " << r.nodes[static_cast<std::size_t>(p.pair.b)] << ": "
           << gbps_text(p.bw_median) << ", " << usec(p.lat_us) << " (p99 " << usec(p.lat_p99_us)
           << ") over " << (p.transport.empty() ? "?" : p.transport) << '\n';
      }
    }
  }
  return os.str();
}

}  // namespace shakedown
