#include "analysis/gemm_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "analysis/stragglers.hpp"
#include "config/load.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

std::string rank_name(const std::vector<RankInfo>& ranks, int r) {
  for (const auto& info : ranks) {
    if (info.rank == r) {
      return "rank " + std::to_string(r) + " (host " + info.hostname + ", node " +
             std::to_string(info.node_index) + ")";
    }
  }
  return "rank " + std::to_string(r);
}

// TFLOP/s with as many decimals as the magnitude needs (CPU 0.05, GPU 1312).
std::string tflops_text(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  if (std::fabs(v) >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

// One shape as recorded.
struct ShapeData {
  std::string name;
  std::string a_format, b_format, out_dtype;
  bool measured = false;
  std::string skip_reason;
  double flop = 0;                  // 2mnk
  std::vector<double> rank_tflops;  // each rank's median iteration
  std::vector<double> rank_time_us;
  std::vector<double> time_us;  // [iters, world]
  std::size_t iters = 0, world = 0;
  std::vector<double> rel_err, ratio, expected, got;
  std::vector<std::int64_t> worst, rows, group;
  std::vector<std::uint64_t> hash;
  std::vector<std::string> group_name;
  std::string unchecked;  // ranks whose output could not be checked, and why
};

ShapeData read_shape(const RunFile& f, const std::string& name) {
  ShapeData s;
  s.name = name;
  const std::string path = schema::gemm_group(name);
  s.a_format = f.attr_string(path, schema::gemm::kAttrAFormat);
  s.b_format = f.attr_string(path, schema::gemm::kAttrBFormat);
  s.out_dtype = f.attr_string(path, schema::gemm::kAttrOutDtype);
  s.measured = f.attr_int64(path, schema::gemm::kAttrSkipped) == schema::kSkipMeasured;
  if (f.has_attr(path, schema::gemm::kAttrFlop))
    s.flop = f.attr_double(path, schema::gemm::kAttrFlop);
  if (!s.measured) {
    s.skip_reason = f.has_attr(path, schema::gemm::kAttrSkipReason)
                        ? f.attr_string(path, schema::gemm::kAttrSkipReason)
                        : "";
    return s;
  }
  std::vector<std::uint64_t> dims;
  const auto tflops = f.read(path, schema::gemm::kTflops, &dims);
  const auto time = f.read(path, schema::gemm::kTimeUs);
  const std::size_t iters = dims.at(0), world = dims.at(1);
  s.time_us = time;
  s.iters = iters;
  s.world = world;
  for (std::size_t r = 0; r < world; ++r) {
    std::vector<double> mine(iters), mine_t(iters);
    for (std::size_t i = 0; i < iters; ++i) {
      mine[i] = tflops[i * world + r];
      mine_t[i] = time[i * world + r];
    }
    s.rank_tflops.push_back(median(mine));
    s.rank_time_us.push_back(median(mine_t));
  }
  s.rel_err = f.read(path, schema::gemm::kMaxRelErr);
  s.ratio = f.read(path, schema::gemm::kErrBoundRatio);
  s.expected = f.read(path, schema::gemm::kWorstExpected);
  s.got = f.read(path, schema::gemm::kWorstGot);
  s.worst = f.read(path, schema::gemm::kWorstIndex);
  s.rows = f.read(path, schema::gemm::kRowsChecked);
  s.group = f.read(path, schema::gemm::kHashGroup);
  s.hash = f.read(path, schema::gemm::kOutputHash);
  if (f.has_attr(path, schema::gemm::kAttrUnchecked)) {
    s.unchecked = f.attr_string(path, schema::gemm::kAttrUnchecked);
  }
  const auto groups = f.attr_int64(path, schema::gemm::kAttrHashGroups);
  for (std::int64_t g = 0; g < groups; ++g) {
    s.group_name.push_back(
        f.attr_string(path, schema::gemm::kAttrHashGroupPrefix + std::to_string(g)));
  }
  return s;
}

// A shape a failed write left half written is named in `unreadable` and left out.
std::vector<ShapeData> read_shapes(const RunFile& f, std::vector<std::string>& unreadable) {
  std::vector<ShapeData> shapes;
  std::vector<std::pair<std::int64_t, std::string>> names;
  for (const auto& name : f.children(schema::kGemmGroup)) {
    const std::string path = schema::gemm_group(name);
    try {
      if (f.has_attr(path, schema::gemm::kAttrOrder)) {
        names.emplace_back(f.attr_int64(path, schema::gemm::kAttrOrder), name);
      }
    } catch (const Error& e) {
      unreadable.push_back("gemm " + name + ": unreadable: " + e.what());
    }
  }
  std::sort(names.begin(), names.end());  // the order they ran in
  for (const auto& [order, name] : names) {
    try {
      shapes.push_back(read_shape(f, name));
    } catch (const Error& e) {
      unreadable.push_back("gemm " + name + ": unreadable: " + e.what());
    }
  }
  return shapes;
}

// One hash group (ranks running the same code on the same kind of device) of one shape.
struct GroupVerdict {
  std::vector<int> members;
  std::vector<int> suspects;  // ranks off a strict majority's hash
  bool undetermined = false;  // hashes differ and no strict majority says which are wrong
};

GroupVerdict judge_group(const ShapeData& s, std::int64_t g) {
  GroupVerdict v;
  std::map<std::uint64_t, int> count;
  for (std::size_t r = 0; r < s.group.size(); ++r) {
    if (s.group[r] != g) continue;
    v.members.push_back(static_cast<int>(r));
    ++count[s.hash[r]];
  }
  if (count.size() <= 1) return v;
  std::uint64_t best = 0;
  int best_count = 0;
  for (const auto& [h, c] : count) {
    if (c > best_count) {
      best = h;
      best_count = c;
    }
  }
  if (2 * best_count <= static_cast<int>(v.members.size())) {
    v.undetermined = true;  // e.g. two ranks that differ: either may be the wrong one
    return v;
  }
  for (int r : v.members) {
    if (s.hash[static_cast<std::size_t>(r)] != best) v.suspects.push_back(r);
  }
  return v;
}

// The table row of one shape (what format_gemm prints).
GemmShapeRow table_row(const ShapeData& s, const std::vector<RankInfo>& ranks) {
  GemmShapeRow row;
  row.name = s.name;
  row.formats = s.a_format + "x" + s.b_format;
  row.out_dtype = s.out_dtype;
  row.measured = s.measured;
  row.skip_reason = s.skip_reason;
  if (!s.measured) return row;
  int slowest = -1;
  row.min_tflops = row.max_tflops = kNaN;
  for (std::size_t r = 0; r < s.rank_tflops.size(); ++r) {
    const double v = s.rank_tflops[r];
    if (std::isnan(v)) continue;
    if (slowest < 0 || v < s.rank_tflops[static_cast<std::size_t>(slowest)]) {
      slowest = static_cast<int>(r);
    }
    row.min_tflops = std::isnan(row.min_tflops) ? v : std::min(row.min_tflops, v);
    row.max_tflops = std::isnan(row.max_tflops) ? v : std::max(row.max_tflops, v);
  }
  row.median_tflops = median(s.rank_tflops);
  row.rank_tflops = s.rank_tflops;
  row.slowest_rank = slowest;
  row.slowest = "-";
  if (slowest >= 0) {
    row.slowest = std::to_string(slowest);
    for (const auto& info : ranks) {
      if (info.rank == slowest) {
        row.slowest += " (" + info.hostname + ", node " + std::to_string(info.node_index) + ")";
      }
    }
  }
  // Over the ranks whose output was checked (rows_checked > 0); a NaN there shows as nan.
  for (std::size_t r = 0; r < s.ratio.size(); ++r) {
    if (s.rows[r] == 0) continue;
    row.err =
        std::isnan(s.rel_err[r]) || std::isnan(row.err) ? kNaN : std::max(row.err, s.rel_err[r]);
    row.bound =
        std::isnan(s.ratio[r]) || std::isnan(row.bound) ? kNaN : std::max(row.bound, s.ratio[r]);
  }
  // Bits must agree within a hash group only (same code on the same kind of device).
  std::map<std::int64_t, std::map<std::uint64_t, int>> distinct;
  for (std::size_t r = 0; r < s.hash.size(); ++r) ++distinct[s.group[r]][s.hash[r]];
  int differing = 0;
  for (const auto& [g, hashes_of_group] : distinct) differing += hashes_of_group.size() > 1;
  row.hashes = differing == 0 ? "agree (" + std::to_string(s.hash.size()) + ")"
                              : "differ in " + std::to_string(differing) + " group(s)!";
  if (distinct.size() > 1) row.hashes += " [" + std::to_string(distinct.size()) + " groups]";
  return row;
}

}  // namespace

GemmFindings gemm_findings(const RunFile& file, const RunFacts& facts) {
  GemmFindings out;
  if (!facts.asked_for("gemm") && !file.has(schema::kGemmGroup)) return out;
  if (!file.has(schema::kGemmGroup)) {
    out.findings.push_back(not_recorded(facts, "gemm"));
    return out;
  }
  out.ran = true;
  const std::vector<RankInfo>& ranks = facts.ranks;
  const ChecksConfig& limits = facts.config.checks;
  const std::vector<ShapeData> shapes = read_shapes(file, out.notes);
  out.engine = file.has_attr(schema::kGemmGroup, "engine")
                   ? file.attr_string(schema::kGemmGroup, "engine")
                   : "?";

  // One finding about rank r of a shape.
  auto about_rank = [&](const char* check, CheckStatus status, int r, std::string message) {
    Finding f = rank_finding(facts, check, status, r);
    f.message = std::move(message);
    return f;
  };
  std::vector<Finding> hash, bound, slow, fast_enough;
  std::vector<StragglerCase> straggler_cases;
  // A sanitizer build's timings are not held to a platform (platform.expected says so).
  const Platform* platform =
      facts.platform && facts.sanitizers.empty() ? &*facts.platform : nullptr;
  const double min_fraction = limits.min_tflops_fraction;
  std::size_t tflops_compared = 0;
  double tflops_lowest = 0;
  std::string tflops_lowest_text;
  std::vector<std::string> skipped;
  std::vector<int> lonely, unchecked;
  for (const ShapeData& s : shapes) {
    out.rows.push_back(table_row(s, ranks));
    if (!s.measured) {
      skipped.push_back(s.name + ": " + s.skip_reason);
      continue;
    }
    ++out.measured;
    for (std::int64_t g = 0; g < static_cast<std::int64_t>(s.group_name.size()); ++g) {
      const GroupVerdict v = judge_group(s, g);
      const std::string& code = s.group_name[static_cast<std::size_t>(g)];
      if (v.members.size() == 1) lonely.push_back(v.members.front());
      for (int r : v.suspects) {
        Finding f = about_rank(
            "gemm.output_hash", CheckStatus::kFail, r,
            rank_name(ranks, r) + ": gemm " + s.name +
                " output hash differs from the majority of the " +
                std::to_string(v.members.size()) +
                " ranks running the same code: silent data corruption suspected [" + code + "]");
        f.corruption = 1;
        f.evidence = "shape " + s.name;
        hash.push_back(f);
      }
      if (v.undetermined) {
        std::vector<std::string> names;
        for (int r : v.members) names.push_back(rank_name(ranks, r));
        Finding f = run_finding("gemm.output_hash", CheckStatus::kFail,
                                "gemm " + s.name + ": the output hashes of " + join(names, ", ") +
                                    " differ and no majority says which is wrong: silent data "
                                    "corruption on at least one of them; run again with more "
                                    "ranks of this kind to find it [" +
                                    code + "]");
        f.subject_kind = "shape";
        f.subject = s.name;
        f.corruption = 1;
        hash.push_back(f);
      }
    }
    for (std::size_t r = 0; r < s.ratio.size(); ++r) {
      if (s.rows[r] == 0) {  // the check could not run (memory): say so, do not blame
        unchecked.push_back(static_cast<int>(r));
        continue;
      }
      if (s.ratio[r] <= 1.0) continue;  // NaN and inf fail too
      Finding f = about_rank(
          "gemm.numerics", CheckStatus::kFail, static_cast<int>(r),
          rank_name(ranks, static_cast<int>(r)) + ": gemm " + s.name +
              " output outside the error bound: |D - R| = " + general_text(s.ratio[r], 3) +
              " x bound at D[" + std::to_string(s.worst[r]) + "]: expected " +
              general_text(s.expected[r], 9) + ", got " + general_text(s.got[r], 9));
      f.corruption = 1;
      f.value = s.ratio[r];
      f.expected = 1;
      f.unit = "x error bound";
      bound.push_back(f);
    }
    if (!s.unchecked.empty()) out.notes.push_back("gemm " + s.name + ": " + s.unchecked);
    // Against the platform's TFLOP/s, per rank, for GEMMs big enough for its figure to hold.
    if (platform != nullptr && platform->fp8_tflops > 0 && s.flop >= platform->min_flop) {
      for (std::size_t r = 0; r < s.rank_tflops.size(); ++r) {
        const double got = s.rank_tflops[r];
        if (std::isnan(got)) continue;
        ++tflops_compared;
        const double ratio = got / platform->fp8_tflops;
        if (tflops_lowest_text.empty() || ratio < tflops_lowest) {
          tflops_lowest = ratio;
          tflops_lowest_text = rank_name(ranks, static_cast<int>(r)) + " " + s.name;
        }
        if (ratio >= min_fraction) continue;
        Finding f = about_rank(
            "gemm.tflops", below_expected(facts, ratio, min_fraction), static_cast<int>(r),
            rank_name(ranks, static_cast<int>(r)) + ": gemm " + s.name + " " + tflops_text(got) +
                " TFLOP/s is " + fixed_text(100 * ratio, 0) + "% of " + platform->name + "'s " +
                tflops_text(platform->fp8_tflops) + " (pass: " + fixed_text(100 * min_fraction, 0) +
                "%, checks.min_tflops_fraction" + shared_cores_note(facts, ratio, min_fraction) +
                ")");
        f.value = got;
        f.expected = platform->fp8_tflops;
        f.unit = "TFLOP/s";
        f.evidence = "median of the rank's iterations";
        fast_enough.push_back(f);
      }
    }
    straggler_cases.push_back({s.name, s.time_us, s.iters, s.world, 0});
  }
  const StragglerLimits straggler_limits = facts.straggler_limits();
  const Stragglers found = find_stragglers(straggler_cases, straggler_limits);
  // A PASS needs ranks to compare and samples enough to show one slower.
  std::string unjudged = straggler_cases.empty() ? "no shape measured on every rank" : "";
  std::size_t min_iters = 0;
  if (unjudged.empty()) {
    min_iters = straggler_cases.front().iters;
    for (const StragglerCase& c : straggler_cases) min_iters = std::min(min_iters, c.iters);
    unjudged = cannot_judge(straggler_cases.size(), min_iters, straggler_cases.front().world,
                            "ranks", straggler_limits.alpha, "gemm.iters");
  }
  for (const StragglerEvidence& e : found.named) {
    Finding f = about_rank("gemm.stragglers", straggler_status(facts, e.excess), e.rank,
                           rank_name(ranks, e.rank) + ": " + fixed_text(100 * e.excess, 0) +
                               "% slower than the other ranks in " + std::to_string(e.flagged) +
                               "/" + std::to_string(e.compared) + " GEMM shapes (" +
                               join(e.cases, ", ") + "), " + p_text(e.p));
    f.value = e.excess;
    f.expected = facts.straggler_slowdown();
    f.unit = "fraction slower";
    f.evidence = std::to_string(e.flagged) + "/" + std::to_string(e.compared) +
                 " shapes, one-sided Mann-Whitney vs the other ranks, Bonferroni-corrected p " +
                 general_text(e.p, 2);
    slow.push_back(f);
  }
  auto unique_ranks = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  auto list = [&](const std::vector<int>& v) {
    std::vector<std::string> names;
    for (int r : v) names.push_back(std::to_string(r));
    return (v.size() == 1 ? "rank " : "ranks ") + join(names, ",");
  };
  lonely = unique_ranks(lonely);
  unchecked = unique_ranks(unchecked);
  const std::string world = std::to_string(ranks.size()) + " ranks";

  // Coverage: a phase asked for that measured nothing fails.
  Finding cov = run_finding("gemm.coverage", CheckStatus::kPass,
                            std::to_string(out.measured) + " shape(s) measured on " + world +
                                " (engine " + out.engine + ")");
  cov.value = static_cast<double>(out.measured);
  cov.expected = static_cast<double>(shapes.size());
  cov.unit = "shapes";
  if (out.measured == 0) {
    cov.status = CheckStatus::kFail;
    cov.message = shapes.empty()
                      ? "nothing measured: no shape was run"
                      : "nothing measured: every shape was skipped (" + join(skipped, "; ") + ")";
  } else if (!skipped.empty()) {
    cov.status = CheckStatus::kWarn;
    cov.message = std::to_string(out.measured) + " of " + std::to_string(shapes.size()) +
                  " shapes measured; skipped: " + join(skipped, "; ");
  }
  out.findings.push_back(cov);
  if (out.measured == 0) return out;

  if (hash.empty()) {
    hash.push_back(lonely.empty()
                       ? run_finding("gemm.output_hash", CheckStatus::kPass,
                                     "every rank's output hash agrees with its peers' in " +
                                         std::to_string(out.measured) + " shape(s)")
                       : run_finding("gemm.output_hash", CheckStatus::kWarn,
                                     list(lonely) +
                                         " had no peer running the same code on the same kind "
                                         "of device: their output was not compared (run more "
                                         "ranks of each kind)"));
  }
  if (bound.empty()) {
    bound.push_back(
        unchecked.empty()
            ? run_finding("gemm.numerics", CheckStatus::kPass,
                          "every checked output element within the stated error bound")
            : run_finding("gemm.numerics", CheckStatus::kWarn,
                          list(unchecked) + " could not be checked (" +
                              (out.notes.empty() ? std::string("memory") : out.notes.front()) +
                              ")"));
  }
  if (!found.together.empty()) {
    add_slower_together(slow, 0, slower_together_finding("gemm.stragglers", found.together));
  } else if (slow.empty() && !unjudged.empty()) {
    slow.push_back(run_finding("gemm.stragglers", CheckStatus::kSkip, "slow ranks: " + unjudged));
  } else if (slow.empty()) {
    slow.push_back(run_finding(
        "gemm.stragglers", CheckStatus::kPass,
        "no rank consistently slower: none at least " +
            fixed_text(100 * facts.straggler_slowdown(), 0) +
            "% slower than the others, beyond their spread and with p < 0.01, in most of " +
            std::to_string(straggler_cases.size()) + " shape(s)" +
            (facts.oversubscribed ? " (judged against the spread of ranks sharing cores)" : "") +
            few_samples_note(straggler_cases.size(), min_iters, straggler_cases.front().world,
                             straggler_limits.alpha, "gemm.iters")));
  }
  if (fast_enough.empty() && platform != nullptr && platform->fp8_tflops > 0) {
    fast_enough.push_back(
        tflops_compared > 0
            ? run_finding("gemm.tflops", CheckStatus::kPass,
                          std::to_string(tflops_compared) + " rank x shape results at >= " +
                              fixed_text(100 * min_fraction, 0) + "% of " + platform->name + "'s " +
                              tflops_text(platform->fp8_tflops) + " TFLOP/s (lowest " +
                              fixed_text(100 * tflops_lowest, 0) + "%: " + tflops_lowest_text + ")")
            : run_finding("gemm.tflops", CheckStatus::kSkip,
                          "no shape of at least " + general_text(platform->min_flop, 3) +
                              " flop, where " + platform->name + "'s TFLOP/s figure holds"));
  }
  for (auto* v : {&hash, &bound, &slow, &fast_enough}) {
    out.findings.insert(out.findings.end(), v->begin(), v->end());
  }
  return out;
}

std::string format_gemm(const GemmFindings& findings, bool explain) {
  if (!findings.ran) return "";
  std::ostringstream os;
  if (explain) {
    os << "  engine " << findings.engine
       << "; TFLOP/s = 2mnk / time of each rank's median iteration;"
       << " err = max |D - R| / max |R| against fp64, bound = the worst element's error / its "
          "bound\n";
  }
  char line[256];
  std::snprintf(line, sizeof line, "  %-22s %-10s %-4s %9s %9s %9s  %-28s %8s %6s  %s\n", "shape",
                "A x B", "out", "min", "median", "max", "slowest rank", "err", "bound", "hashes");
  os << line;
  for (const GemmShapeRow& row : findings.rows) {
    if (!row.measured) {
      std::snprintf(line, sizeof line, "  %-22s %-10s %-4s skipped: %s\n", row.name.c_str(),
                    row.formats.c_str(), row.out_dtype.c_str(), row.skip_reason.c_str());
      os << line;
      continue;
    }
    std::snprintf(line, sizeof line, "  %-22s %-10s %-4s %9s %9s %9s  %-28s %8.2g %6.2f%s %s\n",
                  row.name.c_str(), row.formats.c_str(), row.out_dtype.c_str(),
                  tflops_text(row.min_tflops).c_str(), tflops_text(row.median_tflops).c_str(),
                  tflops_text(row.max_tflops).c_str(), row.slowest.c_str(), row.err, row.bound,
                  row.bound > 1 || std::isnan(row.bound) ? "!" : " ", row.hashes.c_str());
    os << line;
  }
  for (const auto& l : findings.notes) os << "  ! " << l << "\n";
  return os.str();
}

}  // namespace shakedown
