#include "fabric/localise.hpp"

#include <algorithm>
#include <cmath>

#include "core/stats.hpp"

namespace shakedown::fabric {

namespace {

bool has(const std::vector<int>& sorted, int x) {
  return std::binary_search(sorted.begin(), sorted.end(), x);
}

int other_end(const NodePair& p, int node) {
  return p.a == node ? p.b : p.a;
}

std::string list_text(const std::vector<int>& nodes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(nodes[i]);
  }
  return out;
}

}  // namespace

Reference reference_of(std::span<const PairResult> pass) {
  Reference ref{kNaN, kNaN};
  for (const PairResult& r : pass) {
    if (std::isfinite(r.bw_GBps) && !(r.bw_GBps <= ref.best_bw_GBps)) ref.best_bw_GBps = r.bw_GBps;
    if (std::isfinite(r.lat_us) && !(r.lat_us >= ref.best_lat_us)) ref.best_lat_us = r.lat_us;
  }
  return ref;
}

unsigned suspect_reasons(const PairResult& r, const Reference& ref, const Thresholds& t) {
  // A pair with neither figure failed; one with a figure missing where its peers have one too.
  const bool no_bw = std::isnan(r.bw_GBps) && !std::isnan(ref.best_bw_GBps);
  const bool no_lat = std::isnan(r.lat_us) && !std::isnan(ref.best_lat_us);
  if (no_bw || no_lat) return kFailed;
  unsigned reasons = 0;
  if (r.bw_GBps < t.bw_fraction * ref.best_bw_GBps) reasons |= kSlowBandwidth;
  if (r.lat_us > t.lat_factor * ref.best_lat_us) reasons |= kSlowLatency;
  return reasons;
}

std::string reason_text(unsigned reasons) {
  if ((reasons & kFailed) != 0) return "failed";
  if (reasons == (kSlowBandwidth | kSlowLatency)) return "bandwidth and latency";
  if ((reasons & kSlowBandwidth) != 0) return "bandwidth";
  if ((reasons & kSlowLatency) != 0) return "latency";
  return "";
}

Suspects find_suspects(int node_count, std::span<const PairResult> pass,
                       std::span<const unsigned> reasons) {
  std::vector<NodePair> open;
  for (std::size_t i = 0; i < pass.size() && i < reasons.size(); ++i) {
    if (reasons[i] != 0) open.push_back(pass[i].pair);
  }
  std::sort(open.begin(), open.end());
  open.erase(std::unique(open.begin(), open.end()), open.end());
  Suspects s;
  while (true) {
    std::vector<int> count(static_cast<std::size_t>(std::max(node_count, 0)), 0);
    for (const NodePair& p : open) {
      ++count[static_cast<std::size_t>(p.a)];
      ++count[static_cast<std::size_t>(p.b)];
    }
    const auto most = std::max_element(count.begin(), count.end());
    if (most == count.end() || *most < 2) break;
    const int node = static_cast<int>(most - count.begin());
    s.nodes.push_back(node);
    std::erase_if(open, [&](const NodePair& p) { return p.a == node || p.b == node; });
  }
  std::sort(s.nodes.begin(), s.nodes.end());
  s.links = open;
  for (std::size_t i = 0; i < pass.size() && i < reasons.size(); ++i) {
    if (reasons[i] != 0) s.failing.push_back(pass[i].pair);
  }
  std::sort(s.failing.begin(), s.failing.end());
  s.failing.erase(std::unique(s.failing.begin(), s.failing.end()), s.failing.end());
  std::vector<int> ends;
  for (const NodePair& p : s.links) {
    ends.push_back(p.a);
    ends.push_back(p.b);
  }
  std::sort(ends.begin(), ends.end());
  for (int n = 0; n < node_count; ++n) {
    if (!has(s.nodes, n) && !has(ends, n)) s.good.push_back(n);
  }
  return s;
}

RetestPlan plan_retests(const Suspects& suspects, int partners, int budget) {
  RetestPlan plan;
  const auto& good = suspects.good;
  std::size_t cursor = 0;  // spreads the retests over the good nodes
  const auto next_good = [&](const std::vector<int>& not_these) {
    for (std::size_t tries = 0; tries < good.size(); ++tries) {
      const int g = good[cursor++ % good.size()];
      if (std::find(not_these.begin(), not_these.end(), g) == not_these.end()) return g;
    }
    return -1;
  };
  const auto room = [&](std::size_t n) {
    return static_cast<long>(plan.pairs.size() + n) <= static_cast<long>(budget);
  };
  const auto add = [&](NodePair p, RetestKind kind, int subject) {
    plan.pairs.push_back(p);
    plan.kinds.push_back(kind);
    plan.subjects.push_back(subject);
  };
  // Second choice when there are too few good nodes: the ends of suspect links, which their own
  // retests may clear (localise counts a failure with one only then).
  std::vector<int> second;
  for (const NodePair& link : suspects.links) {
    for (const int end : {link.a, link.b}) {
      if (std::find(second.begin(), second.end(), end) == second.end()) second.push_back(end);
    }
  }
  for (const int node : suspects.nodes) {
    const auto want = static_cast<std::size_t>(
        std::min<long>(partners, static_cast<long>(good.size() + second.size())));
    if (good.empty() || want == 0 || !room(want)) {
      plan.unplanned_nodes.push_back(node);
      continue;
    }
    // Partners it was not slow with in the pass first: retesting a slow link alone would blame
    // the node for it.
    std::vector<int> chosen, avoid;
    for (const NodePair& p : suspects.failing) {
      if (p.a == node || p.b == node) avoid.push_back(other_end(p, node));
    }
    // In order: a good node it was not slow with, a second choice it was not slow with, a good
    // node it was slow with, any second choice.
    const auto second_not_in = [&](const std::vector<int>& not_these) {
      for (const int n : second) {
        if (std::find(not_these.begin(), not_these.end(), n) == not_these.end()) return n;
      }
      return -1;
    };
    for (std::size_t k = 0; k < want; ++k) {
      std::vector<int> skip = chosen;
      skip.insert(skip.end(), avoid.begin(), avoid.end());
      int g = next_good(skip);
      if (g < 0) g = second_not_in(skip);
      if (g < 0) g = next_good(chosen);
      if (g < 0) g = second_not_in(chosen);
      if (g < 0) break;
      chosen.push_back(g);
    }
    for (const int g : chosen) add(node_pair(node, g), RetestKind::kPartner, node);
    int again = 0;
    for (const NodePair& p : suspects.failing) {
      if (again == 2 || !room(1)) break;
      if (p.a != node && p.b != node) continue;
      if (has(suspects.nodes, other_end(p, node))) continue;  // between two suspect nodes
      add(p, RetestKind::kAgain, node);
      ++again;
    }
  }
  for (const NodePair& link : suspects.links) {
    if (good.empty() || !room(3)) {
      plan.unplanned_links.push_back(link);
      continue;
    }
    add(link, RetestKind::kAgain, -1);
    const int ga = next_good({});
    const int gb = good.size() > 1 ? next_good({ga}) : ga;
    add(node_pair(link.a, ga), RetestKind::kPartner, link.a);
    add(node_pair(link.b, gb), RetestKind::kPartner, link.b);
  }
  return plan;
}

std::vector<PairResult> results_in_order(std::span<const NodePair> planned,
                                         std::span<const PairResult> measured) {
  std::vector<PairResult> out;
  out.reserve(planned.size());
  for (const NodePair& p : planned) {
    const auto it = std::find_if(measured.begin(), measured.end(),
                                 [&](const PairResult& r) { return r.pair == p; });
    out.push_back(it == measured.end() ? PairResult{p, kNaN, kNaN} : *it);
  }
  return out;
}

std::vector<std::size_t> plan_repeats(const RetestPlan& plan, std::span<const PairResult> retests,
                                      const Reference& ref, const Thresholds& t, int budget) {
  std::vector<std::size_t> out;
  const long room = static_cast<long>(budget) - static_cast<long>(plan.pairs.size());
  for (std::size_t i = 0; i < plan.pairs.size() && static_cast<long>(out.size()) < room; ++i) {
    if (i < retests.size() && suspect_reasons(retests[i], ref, t) == 0) continue;
    // A pair planned twice shares one measurement: it runs again once.
    const bool twice = std::any_of(out.begin(), out.end(),
                                   [&](std::size_t k) { return plan.pairs[k] == plan.pairs[i]; });
    if (!twice) out.push_back(i);
  }
  return out;
}

std::vector<PairResult> with_repeats(std::span<const PairResult> retests,
                                     std::span<const std::size_t> repeated,
                                     std::span<const PairResult> repeats, const Reference& ref,
                                     const Thresholds& t) {
  std::vector<PairResult> out(retests.begin(), retests.end());
  for (std::size_t k = 0; k < repeated.size() && k < repeats.size(); ++k) {
    if (repeated[k] >= out.size() || suspect_reasons(repeats[k], ref, t) != 0) continue;
    // Every retest of that pair (planned twice, it was measured once).
    const NodePair pair = retests[repeated[k]].pair;
    for (PairResult& r : out) {
      if (r.pair == pair) r = repeats[k];
    }
  }
  return out;
}

Judged judge_pass(int node_count, std::span<const PairResult> pass, const Thresholds& t) {
  Judged j;
  j.reference = reference_of(pass);
  j.reasons.reserve(pass.size());
  for (const PairResult& r : pass) j.reasons.push_back(suspect_reasons(r, j.reference, t));
  j.suspects = find_suspects(node_count, pass, j.reasons);
  return j;
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kConvicted:
      return "convicted";
    case Outcome::kAcquitted:
      return "acquitted";
    case Outcome::kUnresolved:
      return "unresolved";
  }
  return "?";
}

Localisation localise(const Suspects& suspects, const RetestPlan& plan,
                      std::span<const PairResult> retests, const Reference& ref,
                      const Thresholds& t) {
  const auto bad = [&](std::size_t i) {
    return i >= retests.size() || suspect_reasons(retests[i], ref, t) != 0;
  };
  // A partner to be trusted: a good node, or a suspect link's end that passed every retest
  // against good partners.
  const auto cleared = [&](int node) {
    if (has(suspects.good, node)) return true;
    bool any = false;
    for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
      if (plan.kinds[i] != RetestKind::kPartner || plan.subjects[i] != node) continue;
      if (bad(i) || !has(suspects.good, other_end(plan.pairs[i], node))) return false;
      any = true;
    }
    return any;
  };
  const auto failed_a_retest = [&](int node) {
    for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
      if (plan.kinds[i] == RetestKind::kPartner && plan.subjects[i] == node && bad(i)) return true;
    }
    return false;
  };
  // A suspect's retests against partners: those it failed with (cleared partners only) and
  // passed with.
  const auto with_good = [&](int node, std::vector<int>& failed_with,
                             std::vector<int>& passed_with) {
    for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
      if (plan.kinds[i] != RetestKind::kPartner || plan.subjects[i] != node) continue;
      const int partner = other_end(plan.pairs[i], node);
      if (!bad(i)) {
        passed_with.push_back(partner);
      } else if (cleared(partner)) {
        failed_with.push_back(partner);
      }
    }
  };
  // The pair run again: -1 not retested, 0 passed, 1 failed.
  const auto again = [&](const NodePair& pair) {
    for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
      if (plan.kinds[i] == RetestKind::kAgain && plan.pairs[i] == pair) return bad(i) ? 1 : 0;
    }
    return -1;
  };
  const auto unplanned_why = [&] {
    return suspects.good.empty()
               ? std::string(
                     "no node passed all its pairs, so there is no good partner to retest it with")
               : std::string("the retest budget was spent before it");
  };
  Localisation out;
  for (const int node : suspects.nodes) {
    NodeFinding f;
    f.node = node;
    if (std::find(plan.unplanned_nodes.begin(), plan.unplanned_nodes.end(), node) !=
        plan.unplanned_nodes.end()) {
      f.why = unplanned_why();
      out.nodes.push_back(std::move(f));
      continue;
    }
    with_good(node, f.failed_with, f.passed_with);
    if (f.failed_with.size() >= 2) {
      f.outcome = Outcome::kConvicted;
    } else if (f.failed_with.empty() && !f.passed_with.empty()) {
      f.outcome = Outcome::kAcquitted;
      // Cleared by its partners: a pair of it that is slow again is a link at fault, when the
      // other end is trusted too (a good node, or one whose own retests all passed).
      for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
        if (plan.kinds[i] != RetestKind::kAgain || plan.subjects[i] != node || !bad(i)) continue;
        LinkFinding link;
        link.pair = plan.pairs[i];
        const int other = other_end(link.pair, node);
        if (cleared(other)) {
          link.outcome = Outcome::kConvicted;
        } else if (failed_a_retest(other)) {
          link.why = "node " + std::to_string(other) + " was slow with other partners too";
        } else {
          link.why = "node " + std::to_string(other) + " was not retested with a good partner";
        }
        out.links.push_back(std::move(link));
      }
    } else {
      f.why = "failed with " + std::to_string(f.failed_with.size()) + " of " +
              std::to_string(f.failed_with.size() + f.passed_with.size()) + " good partner(s) (" +
              list_text(f.failed_with) + "); conviction takes 2 different good partners";
    }
    out.nodes.push_back(std::move(f));
  }
  for (const NodePair& link : suspects.links) {
    LinkFinding f;
    f.pair = link;
    if (std::find(plan.unplanned_links.begin(), plan.unplanned_links.end(), link) !=
        plan.unplanned_links.end()) {
      f.why = unplanned_why();
      out.links.push_back(std::move(f));
      continue;
    }
    std::vector<int> fa, pa, fb, pb;
    with_good(link.a, fa, pa);
    with_good(link.b, fb, pb);
    if (again(link) == 0) {
      f.outcome = Outcome::kAcquitted;
    } else if (fa.empty() && fb.empty() && !pa.empty() && !pb.empty()) {
      f.outcome = Outcome::kConvicted;
    } else {
      const int end = !fa.empty() ? link.a : link.b;
      const int partner = !fa.empty() ? fa.front() : (!fb.empty() ? fb.front() : -1);
      f.why = partner >= 0
                  ? "node " + std::to_string(end) + " was also slow with good partner " +
                        std::to_string(partner) + ": the node, not only this link, may be at fault"
                  : "its ends were not retested with a good partner";
    }
    out.links.push_back(std::move(f));
  }
  std::sort(out.links.begin(), out.links.end(),
            [](const LinkFinding& x, const LinkFinding& y) { return x.pair < y.pair; });
  return out;
}

}  // namespace shakedown::fabric
