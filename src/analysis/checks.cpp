#include "analysis/checks.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/number_text.hpp"
#include "analysis/stragglers.hpp"
#include "config/load.hpp"
#include "config/platforms.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

// How a slower-together finding's message starts: what follows is the group's own sentence.
constexpr std::string_view kNoneNamed = "none named: ";

std::string sweep_name(const SweepData& s) {
  return s.scope + " " + s.op + " " + s.leaf + " " + s.mode;
}

}  // namespace

CheckStatus below_expected(const RunFacts& facts, double ratio, double fraction) {
  return facts.oversubscribed && ratio >= 0.5 * fraction ? CheckStatus::kWarn : CheckStatus::kFail;
}

CheckStatus straggler_status(const RunFacts& facts, double excess) {
  return excess >= 0.5 && !facts.oversubscribed ? CheckStatus::kFail : CheckStatus::kWarn;
}

Finding slower_together_finding(std::string check, const std::vector<StragglerEvidence>& together,
                                const std::function<std::string(int)>& label,
                                const std::string& how) {
  std::set<int> group;
  std::set<std::string> cases;
  double most = 0, p = 0;
  for (const StragglerEvidence& e : together) {
    group.insert(e.rank);
    group.insert(e.with.begin(), e.with.end());
    cases.insert(e.cases.begin(), e.cases.end());
    most = std::max(most, e.excess);
    p = std::max(p, e.p);
  }
  std::vector<std::string> who;
  for (int member : group) {
    who.push_back(label ? label(member) : "rank " + std::to_string(member));
  }
  Finding f = run_finding(
      std::move(check), CheckStatus::kPass,
      std::string(kNoneNamed) + join_limited(who, ", ") + " " + how + " as a group, by up to " +
          fixed_text(100 * most, 0) + "% (" + p_text(p) +
          "), none beyond the slowest of the rest: on shared cores the scheduler slows a group "
          "for a whole phase as often as a fault does, so none is named (give each rank a core "
          "of its own to tell)");
  f.subject_kind = "ranks";
  f.subject = join_limited(who, ", ");
  f.value = most;
  f.unit = "fraction slower";
  f.evidence = "in " + join_limited(std::vector<std::string>(cases.begin(), cases.end()), ", ") +
               "; one-sided Mann-Whitney vs the others, Bonferroni-corrected p " +
               general_text(p, 2);
  return f;
}

bool add_together_to_named(std::vector<Finding>& findings, std::size_t from,
                           const std::string& check, const Finding& together) {
  bool any = false;
  for (std::size_t i = from; i < findings.size(); ++i) {
    Finding& f = findings[i];
    if (f.check != check || f.status == CheckStatus::kPass) continue;
    f.evidence += "; also " + together.message.substr(kNoneNamed.size());
    any = true;
  }
  return any;
}

void add_slower_together(std::vector<Finding>& findings, std::size_t from, Finding together) {
  if (!add_together_to_named(findings, from, together.check, together)) {
    findings.push_back(std::move(together));
  }
}

std::string shared_cores_note(const RunFacts& facts, double ratio, double fraction) {
  if (!facts.oversubscribed) return "";
  return below_expected(facts, ratio, fraction) == CheckStatus::kWarn
             ? "; ranks share cores: a warning down to half the pass mark"
             : "; below half the pass mark even for ranks sharing cores";
}

Finding not_recorded(const RunFacts& facts, const std::string& phase) {
  if (facts.meta.abort_phase == phase) {
    return run_finding(phase + ".coverage", CheckStatus::kFail,
                       "nothing recorded: the run ended in the " + phase + " phase");
  }
  if (facts.meta.status != schema::kStatusComplete) {
    return run_finding(phase + ".coverage", CheckStatus::kSkip,
                       "not run: the run ended before the " + phase + " phase");
  }
  return run_finding(phase + ".coverage", CheckStatus::kFail,
                     "the " + phase + " phase was asked for but recorded nothing");
}

namespace {

// Relative bandwidth: members (rails, or nodes of intra_node) whose busbw is well below the
// median of their peers in most of the collectives compared.
struct PeerSample {
  std::string member;  // "rail_1", "node 1"
  int node = -1;
  double busbw = 0;
};

struct MemberTally {
  int low = 0, compared = 0;
  std::vector<double> fractions;
  std::string worst_text;
  double worst_fraction = 2;
  double worst_value = 0, worst_median = 0;
};

void tally_peers(const std::vector<PeerSample>& peers, const std::string& what, double min_fraction,
                 std::map<std::string, MemberTally>& tally) {
  if (peers.size() < 2) return;
  std::vector<double> values;
  for (const auto& p : peers) values.push_back(p.busbw);
  const double med = median(values);
  if (!(med > 0)) return;
  for (const auto& p : peers) {
    MemberTally& t = tally[p.member];
    const double fraction = p.busbw / med;
    ++t.compared;
    t.fractions.push_back(fraction);
    if (fraction < min_fraction) ++t.low;
    if (fraction < t.worst_fraction) {
      t.worst_fraction = fraction;
      t.worst_value = p.busbw;
      t.worst_median = med;
      t.worst_text = what;
    }
  }
}

}  // namespace

Finding run_finding(std::string check, CheckStatus status, std::string message) {
  Finding f;
  const auto dot = check.find('.');
  f.subject_kind = check.starts_with("run.") || check.starts_with("placement.") ? "run" : "phase";
  f.subject = f.subject_kind == "run" ? "run" : check.substr(0, dot);
  f.check = std::move(check);
  f.status = status;
  f.message = std::move(message);
  return f;
}

Finding measured_finding(std::string check, CheckStatus status, std::string subject_kind,
                         std::string subject, double value, double expected, std::string unit) {
  Finding f;
  f.check = std::move(check);
  f.status = status;
  f.subject_kind = std::move(subject_kind);
  f.subject = std::move(subject);
  f.value = value;
  f.expected = expected;
  f.unit = std::move(unit);
  return f;
}

Finding rank_finding(const RunFacts& facts, std::string check, CheckStatus status, int rank) {
  Finding f;
  f.check = std::move(check);
  f.status = status;
  f.subject_kind = "rank";
  f.subject = "rank " + std::to_string(rank);
  f.rank = rank;
  f.node = facts.node_of_rank(rank);
  f.host = facts.host_of_rank(rank);
  return f;
}

std::vector<Finding> placement_checks(const RunFacts& facts) {
  std::vector<Finding> out;
  for (const CheckResult& c : facts.placement)
    out.push_back(run_finding(c.name, c.status, c.reason));
  return out;
}

std::vector<Finding> run_checks(const RunFacts& facts, const CollectivesData& collectives) {
  const int world = facts.meta.world_size;
  const int nodes = facts.meta.node_count;
  Finding f = run_finding("run.coverage", CheckStatus::kPass, "");
  f.value = world;
  f.unit = "ranks";
  std::vector<std::string> untested;
  for (const auto& [scope, why] : collectives.skipped_scopes)
    untested.push_back(scope + " (" + why + ")");
  // An audit (only the inventory asked for) exercises no link by design.
  const bool measures = std::any_of(facts.config.phases.begin(), facts.config.phases.end(),
                                    [](const std::string& p) { return p != "inventory"; });
  if (!measures) {
    f.message = "only the inventory was asked for (an audit): no link was meant to be exercised";
  } else if (world <= 1) {
    f.status = CheckStatus::kWarn;
    f.message = std::string("1 rank: no link was exercised") +
                (facts.asked_for("collectives") ? " (collectives ran inside one process)" : "") +
                "; launch with mpirun or srun, several ranks per node and several nodes, to test "
                "links";
  } else if (facts.meta.virtual_nodes > 0) {
    // Pretend nodes share one host: what passes between them is shared memory, as inside one
    // node, so the network is as untested as on one real node.
    f.status = CheckStatus::kWarn;
    f.message = plural(static_cast<std::size_t>(world), "rank", "ranks") + " on " +
                plural(static_cast<std::size_t>(nodes), "virtual node", "virtual nodes") +
                " of one host: the network between nodes was not tested (the links between "
                "virtual nodes are shared memory)" +
                (untested.empty() ? std::string() : "; not tested: " + join(untested, ", ")) +
                "; launch on 2 or more hosts to test it";
  } else if (nodes <= 1) {
    f.status = CheckStatus::kWarn;
    f.message = "1 node: the network between nodes was not tested" +
                (untested.empty() ? std::string() : "; not tested: " + join(untested, ", ")) +
                "; launch on 2 or more nodes (--virtual-nodes 2 pretends on one host)";
  } else if (!untested.empty()) {
    f.status = CheckStatus::kWarn;
    f.message = "not tested: " + join(untested, ", ");
  } else {
    f.message = plural(static_cast<std::size_t>(world), "rank", "ranks") + " on " +
                plural(static_cast<std::size_t>(nodes), "node", "nodes");
  }
  return {f};
}

std::vector<Finding> inventory_checks(const RunFile& file, const RunFacts& facts) {
  if (!facts.asked_for("inventory")) return {};
  const auto nodes = file.inventory();
  if (nodes.empty()) return {not_recorded(facts, "inventory")};
  const auto expected = static_cast<std::size_t>(std::max(1, facts.meta.node_count));
  Finding f = run_finding("inventory.coverage", CheckStatus::kPass,
                          plural(nodes.size(), "node", "nodes") + " inventoried");
  f.value = static_cast<double>(nodes.size());
  f.expected = static_cast<double>(expected);
  f.unit = "nodes";
  if (nodes.size() < expected) {
    f.status = CheckStatus::kWarn;
    f.message =
        std::to_string(nodes.size()) + " of " + std::to_string(expected) + " nodes inventoried";
  }
  return {f};
}

std::vector<Finding> collectives_checks(const RunFile& file, const RunFacts& facts,
                                        const CollectivesData& data) {
  if (!facts.asked_for("collectives")) return {};
  if (!data.ran) return {not_recorded(facts, "collectives")};
  std::vector<Finding> out;
  const CollectivesConfig& cfg = facts.config.collectives;

  // ---- coverage ----
  std::size_t sweeps = 0, unsupported = 0, sizes = 0, measured = 0, too_small = 0, oom = 0;
  std::vector<std::string> empty_sweeps;
  std::uint64_t oom_from = 0;
  for (const SweepData& s : data.sweeps) {
    if (!s.unsupported.empty()) {
      ++unsupported;
      continue;
    }
    ++sweeps;
    sizes += s.sizes.size();
    for (std::size_t i = 0; i < s.sizes.size(); ++i) {
      if (s.skipped[i] == schema::kSkipMeasured) ++measured;
      if (s.skipped[i] == schema::kSkipTooSmall) ++too_small;
      if (s.skipped[i] == schema::kSkipOutOfMemory) {
        if (oom == 0 || s.sizes[i] < oom_from) oom_from = s.sizes[i];
        ++oom;
      }
    }
    if (s.measured() == 0) empty_sweeps.push_back(sweep_name(s));
  }
  Finding cov = run_finding("collectives.coverage", CheckStatus::kPass, "");
  cov.value = static_cast<double>(measured);
  cov.expected = static_cast<double>(sizes);
  cov.unit = "sizes";
  std::string skips;
  if (oom > 0) skips += plural(oom, "size", "sizes") + " out of memory on at least one rank";
  if (too_small > 0) {
    skips += std::string(skips.empty() ? "" : ", ") + plural(too_small, "size", "sizes") +
             " too small for one element per rank";
  }
  if (measured == 0) {
    cov.status = CheckStatus::kFail;
    cov.message = sweeps == 0
                      ? "nothing measured: no sweep could run" +
                            (unsupported > 0 ? " (" + plural(unsupported, "sweep", "sweeps") +
                                                   " unsupported by the backend)"
                                             : std::string())
                      : "nothing measured: every size was skipped (" + skips + ")";
  } else if (oom > 0 || !empty_sweeps.empty()) {
    cov.status = CheckStatus::kWarn;
    cov.message = std::to_string(measured) + " of " + std::to_string(sizes) + " sizes measured";
    if (oom > 0) {
      cov.message += "; " + plural(oom, "size", "sizes") + " skipped: out of memory on at least " +
                     "one rank (from " + format_size(oom_from) + ")";
    }
    if (!empty_sweeps.empty()) {
      cov.message += "; nothing measured in " + plural(empty_sweeps.size(), "sweep", "sweeps") +
                     " (" + empty_sweeps.front() + (empty_sweeps.size() > 1 ? ", ..." : "") + ")";
    }
  } else {
    cov.message =
        plural(sweeps, "sweep", "sweeps") + ", " + std::to_string(measured) + " sizes measured";
    if (too_small > 0)
      cov.message += " (" + std::to_string(too_small) + " too small for one element per rank)";
  }
  if (unsupported > 0 && measured > 0) {
    cov.message += "; " + plural(unsupported, "sweep", "sweeps") + " unsupported by the " +
                   data.backend + " backend";
  }
  cov.evidence = std::to_string(cfg.iters) + " iterations per size";
  out.push_back(cov);

  // ---- wrong data, per rank ----
  if (cfg.validate == "off") {
    out.push_back(run_finding("collectives.wrong_data", CheckStatus::kSkip,
                              "collectives.validate is off: no output was checked"));
  } else if (measured > 0) {
    struct RankWrong {
      std::int64_t elements = 0;
      std::set<std::string> sweeps;
      std::string first;  // first sweep and size
    };
    std::map<int, RankWrong> bad;
    for (const SweepData& s : data.sweeps) {
      for (std::size_t i = 0; i < s.sizes.size(); ++i) {
        for (std::size_t r = 0; r < s.world; ++r) {
          const std::int64_t w = s.wrong[i * s.world + r];
          if (w <= 0) continue;
          RankWrong& rw = bad[static_cast<int>(r)];
          rw.elements += w;
          rw.sweeps.insert(sweep_name(s));
          if (rw.first.empty()) rw.first = sweep_name(s) + " " + format_size(s.sizes[i]);
        }
      }
    }
    if (bad.empty()) {
      out.push_back(run_finding(
          "collectives.wrong_data", CheckStatus::kPass,
          "every rank's output matched the expected values in " +
              plural(measured, "size", "sizes") + " (" +
              (cfg.validate == "every_iteration" ? "every iteration" : "once per size") + ")"));
    }
    for (const auto& [rank, rw] : bad) {
      Finding f = rank_finding(facts, "collectives.wrong_data", CheckStatus::kFail, rank);
      f.corruption = 1;
      f.value = static_cast<double>(rw.elements);
      f.expected = 0;
      f.unit = "wrong elements";
      f.evidence = "in " + plural(rw.sweeps.size(), "sweep", "sweeps");
      f.message = facts.rank_name(rank) + ": " + std::to_string(rw.elements) +
                  " wrong elements in " + plural(rw.sweeps.size(), "sweep", "sweeps") +
                  ", first in " + rw.first;
      out.push_back(f);
    }
  }

  // ---- lateness: a rank that arrives late at the world's collectives, iteration after
  // iteration (arrival stamped before the barrier, on rank 0's clock) ----
  if (file.schema_version() < 2) {
    out.push_back(run_finding("collectives.lateness", CheckStatus::kSkip,
                              "schema " + std::to_string(file.schema_version()) +
                                  " file: arrival was stamped after the barrier, so it cannot "
                                  "show a late rank"));
  } else {
    std::vector<StragglerCase> cases;
    for (const SweepData& s : data.sweeps) {
      if (s.scope != schema::kScopeWorld || s.mode != "out_of_place" || s.world < 3) continue;
      if (s.measured() == 0 || !file.has(s.path, schema::coll::kArrivalUs)) continue;
      std::size_t iters = 0, iters_t = 0, rows = 0, rows_t = 0;
      const std::vector<double> arrivals =
          read_sweep_samples(file, s, schema::coll::kArrivalUs, &iters, &rows);
      const std::vector<double> times =
          read_sweep_samples(file, s, schema::coll::kTimeUs, &iters_t, &rows_t);
      if (iters == 0 || iters_t != iters || rows_t != rows) continue;
      const std::size_t world = s.world;
      for (std::size_t z = 0; z < s.sizes.size() && z < rows; ++z) {
        if (s.skipped[z] != schema::kSkipMeasured) continue;
        const double* arrival = &arrivals[z * iters * world];
        const double* time = &times[z * iters * world];
        StragglerCase c{sweep_name(s) + " " + format_size(s.sizes[z]), {}, iters, world, 0};
        c.values.assign(iters * world, std::nan(""));
        std::vector<double> durations;
        for (std::size_t i = 0; i < iters; ++i) {
          const double* row = &arrival[i * world];
          const double* t = &time[i * world];
          const double mid = median(std::span<const double>(row, world));
          double longest = 0;
          for (std::size_t r = 0; r < world; ++r) {
            if (std::isfinite(row[r])) c.values[i * world + r] = row[r] - mid;
            if (std::isfinite(t[r])) longest = std::max(longest, t[r]);
          }
          durations.push_back(longest);
        }
        // Late by a tenth of the collective's own duration (checks.straggler_slowdown) at least.
        c.scale = median(durations);
        if (c.scale > 0) cases.push_back(std::move(c));
      }
    }
    const StragglerLimits limits = facts.straggler_limits();
    const std::size_t before_late = out.size();
    Stragglers found = find_stragglers(cases, limits);
    std::vector<StragglerEvidence> late = std::move(found.named);
    // A late rank is a straggler only when it is one of few: when a quarter of the ranks or more
    // arrive later together, it is the collective's own order (a tree's root, the ranks of one
    // host over a network), not a rank that holds the others up.
    const std::size_t few =
        std::max<std::size_t>(1, static_cast<std::size_t>(facts.meta.world_size) / 4);
    // Ranks later together on shared cores are said in the same way: a group, not a straggler.
    std::string group_note =
        found.together.empty()
            ? ""
            : "; " + slower_together_finding("collectives.lateness", found.together, nullptr,
                                             "arrive later than the others")
                         .message;
    if (late.size() > few) {
      std::vector<std::string> names;
      for (const auto& e : late) names.push_back(std::to_string(e.rank));
      group_note += "; ranks " + join(names, ",") +
                    " arrive later as a group (the collective's own order, not one rank holding "
                    "the others up)";
      late.clear();
    }
    for (const StragglerEvidence& e : late) {
      Finding f = rank_finding(facts, "collectives.lateness", CheckStatus::kWarn, e.rank);
      f.value = e.excess;
      f.expected = facts.straggler_slowdown();
      f.unit = "iterations late";
      f.evidence = std::to_string(e.flagged) + "/" + std::to_string(e.compared) +
                   " world sizes, p " + general_text(e.p, 2);
      f.message = facts.rank_name(e.rank) + ": arrives late at the world's collectives by " +
                  fixed_text(100 * e.excess, 0) + "% of an iteration (median) in " +
                  std::to_string(e.flagged) + "/" + std::to_string(e.compared) + " sizes, " +
                  p_text(e.p) +
                  ": something on it (its CPU, a noisy neighbour, its host) delays every step";
      out.push_back(f);
    }
    if (out.size() == before_late) {
      out.push_back(cases.empty()
                        ? run_finding("collectives.lateness", CheckStatus::kSkip,
                                      "no world sweep out of place with 3 or more ranks to compare "
                                      "arrivals")
                        : run_finding("collectives.lateness", CheckStatus::kPass,
                                      "no rank late in most of " + std::to_string(cases.size()) +
                                          " world sizes (arrival before the barrier, on rank 0's "
                                          "clock)" +
                                          group_note));
    }
  }

  // ---- balance: one rail, or one node's intra-node communicator, below its peers ----
  const double min_fraction = facts.config.checks.min_busbw_fraction;
  std::map<std::string, MemberTally> rails, nodes;
  std::map<std::string, int> node_index;
  // Rails: the same sweep on every rail_<L>, at the largest size all of them measured.
  std::map<std::string, std::vector<const SweepData*>> by_sweep;
  for (const SweepData& s : data.sweeps) {
    if (s.scope.starts_with("rail_") && s.measured() > 0) {
      by_sweep[s.op + " " + s.leaf + " " + s.mode].push_back(&s);
    }
  }
  for (const auto& [what, list] : by_sweep) {
    long common = -1;
    for (const SweepData* s : list)
      common = common < 0 ? s->largest() : std::min(common, s->largest());
    if (common < 0) continue;
    std::vector<PeerSample> peers;
    for (const SweepData* s : list) {
      const double bw = s->busbw[static_cast<std::size_t>(common)];
      if (std::isfinite(bw)) peers.push_back({s->scope, -1, bw});
    }
    tally_peers(peers,
                what + " " + format_size(list.front()->sizes[static_cast<std::size_t>(common)]),
                min_fraction, rails);
  }
  // Nodes: each node's own ranks in the intra_node sweeps (out of place), at the largest size.
  if (facts.meta.node_count > 1) {
    for (const SweepData& s : data.sweeps) {
      if (s.scope != schema::kScopeIntraNode || s.mode != "out_of_place") continue;
      const long big = s.largest();
      if (big < 0) continue;
      std::vector<PeerSample> peers;
      for (const auto& [node, bw] :
           node_busbw(file, s, static_cast<std::size_t>(big), facts.ranks)) {
        const std::string name = "node " + std::to_string(node);
        node_index[name] = node;
        peers.push_back({name, node, bw});
      }
      tally_peers(peers,
                  "intra_node " + s.op + " " + s.leaf + " " +
                      format_size(s.sizes[static_cast<std::size_t>(big)]),
                  min_fraction, nodes);
    }
  }
  bool compared = false;
  auto judge = [&](const std::map<std::string, MemberTally>& tally, const std::string& kind,
                   const std::string& peers_name) {
    for (const auto& [member, t] : tally) {
      compared = true;
      // Consistent evidence: low in most of the collectives compared, and in at least two.
      if (t.low < 2 || 2 * t.low <= t.compared) continue;
      const double typical = median(t.fractions);
      // A bad link halves bandwidth or worse; on shared cores a modest dip is noise.
      Finding f = measured_finding(
          "collectives.balance",
          typical < 0.5 && !facts.oversubscribed ? CheckStatus::kFail : CheckStatus::kWarn, kind,
          member, t.worst_value, t.worst_median, "GB/s");
      f.evidence = "below " + fixed_text(100 * min_fraction, 0) + "% of the median in " +
                   std::to_string(t.low) + " of " + std::to_string(t.compared) + " collectives";
      if (kind == "node") {
        f.node = node_index[member];
        f.host = facts.host_of_node(f.node);
        f.subject = facts.node_name(f.node);
      }
      f.message = f.subject + " busbw " + gbps_text(t.worst_value) + " vs median of " + peers_name +
                  " " + gbps_text(t.worst_median) + " (" + t.worst_text + "); " + f.evidence +
                  (facts.oversubscribed ? " (ranks share cores: noisy)" : "");
      out.push_back(f);
    }
  };
  const std::size_t before = out.size();
  judge(rails, "scope", "rails");
  judge(nodes, "node", "nodes");
  if (out.size() == before) {
    if (compared) {
      std::string what;
      if (!rails.empty()) what += plural(rails.size(), "rail", "rails");
      if (!nodes.empty())
        what += std::string(what.empty() ? "" : " and ") + plural(nodes.size(), "node", "nodes") +
                " (intra_node)";
      out.push_back(run_finding("collectives.balance", CheckStatus::kPass,
                                what + " compared: none below " +
                                    fixed_text(100 * min_fraction, 0) +
                                    "% of the median busbw of its peers in most collectives"));
    } else {
      out.push_back(run_finding("collectives.balance", CheckStatus::kSkip,
                                "fewer than 2 rails or nodes to compare with each other"));
    }
  }
  return out;
}

namespace {

constexpr std::uint64_t kLatencyMaxBytes = 4096;

// The platform's name for the path a sweep exercised.
std::string platform_scope(const RunFacts& facts, const std::string& scope) {
  if (scope.starts_with("rail_")) return "rail";
  if (scope == schema::kScopeWorld) return facts.meta.node_count > 1 ? "world" : "intra_node";
  return scope;
}

std::optional<double> figure(const std::map<std::string, std::map<std::string, double>>& table,
                             const std::string& scope, const std::string& op) {
  auto s = table.find(scope);
  if (s == table.end()) return std::nullopt;
  auto o = s->second.find(op);
  if (o == s->second.end()) return std::nullopt;
  return o->second;
}

}  // namespace

std::vector<Finding> platform_checks(const RunFacts& facts, const CollectivesData& data) {
  std::vector<Finding> out;
  if (!facts.platform) {
    out.push_back(
        run_finding("platform.expected", CheckStatus::kSkip,
                    facts.platform_choice.empty()
                        ? "no platform chosen: nothing was compared with expected numbers; set "
                          "checks.platform (" +
                              join(platform_names()) + ", or auto)"
                        : facts.platform_choice + ": nothing was compared with expected numbers"));
    return out;
  }
  const Platform& p = *facts.platform;
  // ---- the nodes are what the platform describes ----
  Finding match = run_finding("platform.match", CheckStatus::kPass, "");
  std::vector<std::string> off;
  for (std::size_t n = 0; n < facts.node_gpu_names.size(); ++n) {
    const std::string& gpu = facts.node_gpu_names[n];
    const bool ok = p.gpu_names.empty()
                        ? gpu.empty()
                        : std::any_of(p.gpu_names.begin(), p.gpu_names.end(), [&](const auto& g) {
                            return !gpu.empty() && gpu.find(g) != std::string::npos;
                          });
    if (!ok) {
      off.push_back(facts.node_name(static_cast<int>(n)) + ": " +
                    (gpu.empty() ? std::string("no GPU") : gpu));
    }
  }
  if (facts.node_gpu_names.empty()) {
    match.status = CheckStatus::kSkip;
    match.message = p.name + ": no inventory recorded to compare the nodes with";
  } else if (!off.empty()) {
    match.status = p.gpu_names.empty() ? CheckStatus::kWarn : CheckStatus::kFail;
    match.message = p.name + " (" + facts.platform_choice + ") describes " +
                    (p.gpu_names.empty() ? std::string("nodes without GPUs")
                                         : join(p.gpu_names, " / ") + " GPUs") +
                    ", but " + std::to_string(off.size()) + " of " +
                    std::to_string(facts.node_gpu_names.size()) + " nodes differ (" + off.front() +
                    (off.size() > 1 ? ", ..." : "") + "): its numbers do not apply to them";
  } else {
    match.message = "every node is what " + p.name + " describes (" + p.description + "; " +
                    facts.platform_choice + ")";
  }
  out.push_back(match);
  // The platform's figures do not describe every node: a failure against them still says how
  // far a node is from them; a pass says nothing, and is not given.
  const bool mismatch = !off.empty();
  if (!facts.sanitizers.empty()) {
    out.push_back(run_finding("platform.expected", CheckStatus::kSkip,
                              "written by a sanitizer build (" + facts.sanitizers +
                                  "): its timings are several times slower than a release "
                                  "build's, so nothing was compared with " +
                                  p.name + "'s figures"));
    return out;
  }
  if (!data.ran) return out;

  // ---- busbw at the largest size, and latency at the smallest ----
  const double fraction = facts.config.checks.min_busbw_fraction;
  std::size_t compared = 0, small = 0, lat_compared = 0;
  std::uint64_t largest_seen = 0;
  double lowest = 0;
  std::string lowest_text;
  std::vector<Finding> bw_bad, lat_bad;
  // The best ratio of each scope and collective over its sweeps (dtypes, reductions, modes),
  // and the family of each finding in bw_bad.
  std::map<std::string, double> best_of_family;
  std::vector<std::string> bw_bad_family;
  for (const SweepData& s : data.sweeps) {
    const long big = s.largest(), tiny = s.smallest();
    // One rank moves nothing over a link (busbw is 0 by definition): nothing to compare.
    if (big < 0 || s.nranks < 2) continue;
    const std::string scope = platform_scope(facts, s.scope);
    if (const auto want = figure(p.busbw_GBps, scope, s.op)) {
      const std::uint64_t bytes = s.sizes[static_cast<std::size_t>(big)];
      largest_seen = std::max(largest_seen, bytes);
      if (bytes < p.min_bytes) {
        ++small;
      } else {
        ++compared;
        const double got = s.busbw[static_cast<std::size_t>(big)];
        const double ratio = got / *want;
        if (lowest_text.empty() || ratio < lowest) {
          lowest = ratio;
          lowest_text = sweep_name(s) + " " + gbps_text(got) + " at " + format_size(bytes);
        }
        const std::string family = s.scope + " " + s.op;
        best_of_family[family] = std::max(best_of_family[family], ratio);
        if (!(ratio >= fraction)) {
          Finding f =
              measured_finding("collectives.expected_busbw", below_expected(facts, ratio, fraction),
                               "scope", sweep_name(s), got, *want, "GB/s");
          f.evidence = "median of " + std::to_string(facts.config.collectives.iters) +
                       " iterations at " + format_size(bytes);
          f.message =
              sweep_name(s) + " busbw " + general_text(got, 3) + " GB/s at " + format_size(bytes) +
              " is " + general_text(100 * ratio, 2) + "% of " + p.name + "'s " +
              general_text(*want, 4) + " GB/s (pass: " + fixed_text(100 * fraction, 0) +
              "%, checks.min_busbw_fraction" + shared_cores_note(facts, ratio, fraction) + ")";
          bw_bad.push_back(f);
          bw_bad_family.push_back(family);
        }
      }
    }
    // Latency ceilings are for small messages: judged only where the sweep started small.
    if (const auto ceiling = figure(p.latency_us, scope, s.op);
        ceiling && tiny >= 0 && s.sizes[static_cast<std::size_t>(tiny)] <= kLatencyMaxBytes) {
      ++lat_compared;
      const double got = s.time_med_us[static_cast<std::size_t>(tiny)];
      if (!(got <= *ceiling)) {
        Finding f = measured_finding("collectives.latency", CheckStatus::kFail, "scope",
                                     sweep_name(s), got, *ceiling, "us");
        f.message = sweep_name(s) + " takes " + fixed_text(got, 1) + " us at " +
                    format_size(s.sizes[static_cast<std::size_t>(tiny)]) + ", above " + p.name +
                    "'s ceiling of " + fixed_text(*ceiling, 0) + " us";
        lat_bad.push_back(f);
      }
    }
  }
  // On shared cores one sweep far below the mark is a failure only when its collective is low in
  // the same scope in every sweep: a slow link or fabric slows every mode and dtype, while a rank
  // descheduled during one sweep's few iterations slows that sweep alone. With the collective
  // at half the mark or better in another sweep, it is a warning that says so.
  for (std::size_t i = 0; i < bw_bad.size(); ++i) {
    Finding& f = bw_bad[i];
    const double best = best_of_family[bw_bad_family[i]];
    if (facts.oversubscribed && f.status == CheckStatus::kFail && best >= 0.5 * fraction) {
      f.status = CheckStatus::kWarn;
      f.message += "; the same collective in this scope reached " + general_text(100 * best, 2) +
                   "% in another sweep (mode or dtype): one sweep disturbed on shared cores, not "
                   "the fabric";
    }
  }
  if (!bw_bad.empty()) {
    out.insert(out.end(), bw_bad.begin(), bw_bad.end());
  } else if (compared > 0 && mismatch) {
    out.push_back(run_finding("collectives.expected_busbw", CheckStatus::kSkip,
                              plural(compared, "sweep", "sweeps") +
                                  " at >= " + fixed_text(100 * fraction, 0) + "% of " + p.name +
                                  "'s figures, which do not describe these nodes " +
                                  "(platform.match): no pass"));
  } else if (compared > 0) {
    out.push_back(run_finding("collectives.expected_busbw", CheckStatus::kPass,
                              plural(compared, "sweep", "sweeps") + " compared with " + p.name +
                                  ": all at >= " + fixed_text(100 * fraction, 0) +
                                  "% of expected (lowest " + fixed_text(100 * lowest, 0) +
                                  "%: " + lowest_text + ")"));
  } else {
    out.push_back(run_finding(
        "collectives.expected_busbw", CheckStatus::kSkip,
        small > 0 ? "no sweep reached " + format_size(p.min_bytes) + ", where " + p.name +
                        "'s busbw figures hold (largest measured: " + format_size(largest_seen) +
                        "); add sizes up to " + format_size(p.min_bytes) + " to collectives.sizes"
                  : p.name + " has no busbw figure for the scopes and collectives that ran"));
  }
  if (!lat_bad.empty()) {
    out.insert(out.end(), lat_bad.begin(), lat_bad.end());
  } else if (lat_compared > 0 && mismatch) {
    out.push_back(run_finding("collectives.latency", CheckStatus::kSkip,
                              plural(lat_compared, "sweep", "sweeps") + " within " + p.name +
                                  "'s latency ceilings, which do not describe these nodes " +
                                  "(platform.match): no pass"));
  } else if (lat_compared > 0) {
    out.push_back(run_finding("collectives.latency", CheckStatus::kPass,
                              plural(lat_compared, "sweep", "sweeps") + " within " + p.name +
                                  "'s latency ceilings at the smallest size"));
  }
  return out;
}

}  // namespace shakedown
