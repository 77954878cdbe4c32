// The JSON report (docs/report-schema.json describes every field; bump kReportVersion when a
// field changes meaning or goes away; adding one is compatible).
#include <cmath>

#include <nlohmann/json.hpp>

#include "analysis/reporters/formats.hpp"
#include "analysis/reporters/text.hpp"
#include "core/stats.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

using Json = nlohmann::ordered_json;

// NaN and infinities are null (nlohmann writes them so); integers stay integers.
Json number(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}
Json index_or_null(int v) {
  return v >= 0 ? Json(v) : Json(nullptr);
}
Json text_or_null(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

// "collectives.wrong_data" -> "collectives".
std::string phase_of(const std::string& check) {
  return check.substr(0, check.find('.'));
}

Json run_json(const RunFile& file, const RunAnalysis& a) {
  const RunMeta& m = a.facts.meta;
  Json run;
  run["file"] = file.path().string();
  run["shakedown_version"] = m.shakedown_version;
  run["schema_version"] = m.schema_version;
  run["status"] = m.status;
  run["started_utc"] = m.started_utc;
  run["finished_utc"] = text_or_null(m.finished_utc);
  run["command_line"] = m.command_line;
  run["world_size"] = m.world_size;
  run["node_count"] = m.node_count;
  run["virtual_nodes"] = m.virtual_nodes;
  run["backend"] = m.backend;
  run["phases"] = a.facts.config.phases;
  run["oversubscribed"] = a.facts.oversubscribed;
  run["sanitizers"] = text_or_null(a.facts.sanitizers);
  run["platform"] = a.facts.platform ? Json(a.facts.platform->name) : Json(nullptr);
  run["platform_choice"] = a.facts.platform_choice;
  return run;
}

Json topology_json(const RunFacts& facts) {
  Json ranks = Json::array(), nodes = Json::object();  // in the order nodes appear
  for (const RankInfo& r : facts.ranks) {
    Json j;
    j["rank"] = r.rank;
    j["node"] = r.node_index;
    j["local_rank"] = r.local_rank;
    j["host"] = r.hostname;
    j["cpus"] = r.cpus;
    j["numa"] = r.numa;
    j["gpu"] = r.gpu_index >= 0 ? Json(r.gpu.name) : Json(nullptr);
    j["gpu_pci_bus_id"] = text_or_null(r.gpu.pci_bus_id);
    j["nic"] = text_or_null(r.nic);
    ranks.push_back(std::move(j));
    Json& n = nodes[std::to_string(r.node_index)];
    if (n.empty()) n = {{"node", r.node_index}, {"host", r.hostname}, {"ranks", Json::array()}};
    n["ranks"].push_back(r.rank);
  }
  Json node_list = Json::array();
  for (auto& [key, n] : nodes.items()) node_list.push_back(std::move(n));
  Json t;
  t["ranks"] = std::move(ranks);
  t["nodes"] = std::move(node_list);
  return t;
}

Json finding_json(const Finding& f) {
  Json j;
  j["check"] = f.check;
  j["phase"] = phase_of(f.check);
  j["status"] = to_string(f.status);
  j["subject_kind"] = f.subject_kind;
  j["subject"] = f.subject;
  j["value"] = number(f.value);
  j["expected"] = number(f.expected);
  j["unit"] = text_or_null(f.unit);
  j["evidence"] = text_or_null(f.evidence);
  j["message"] = f.message;
  j["host"] = text_or_null(f.host);
  j["node"] = index_or_null(f.node);
  j["rank"] = index_or_null(f.rank);
  j["corruption"] = f.corruption != 0;
  return j;
}

Json collectives_json(const RunFile& file, const RunAnalysis& a) {
  const CollectivesData& d = a.collectives;
  if (!d.ran) return nullptr;
  Json sweeps = Json::array();
  for (const SweepData& s : d.sweeps) {
    Json j;
    j["scope"] = s.scope;
    j["op"] = s.op;
    j["dtype"] = s.leaf;
    j["mode"] = s.mode;
    j["nranks"] = s.nranks;
    j["unsupported"] = text_or_null(s.unsupported);
    j["busbw_factor"] = number(s.busbw_factor);
    Json sizes = Json::array();
    std::int64_t wrong_total = 0;
    for (std::size_t i = 0; i < s.sizes.size(); ++i) {
      Json z;
      z["bytes"] = s.sizes[i];
      z["measured"] = s.skipped[i] == schema::kSkipMeasured;
      z["skipped"] = s.skipped[i] == schema::kSkipMeasured   ? Json(nullptr)
                     : s.skipped[i] == schema::kSkipTooSmall ? Json("too_small")
                     : s.skipped[i] == schema::kSkipOutOfMemory
                         ? Json("out_of_memory")
                         : Json("code " + std::to_string(s.skipped[i]));
      z["time_median_us"] = number(s.time_med_us[i]);
      z["time_p95_us"] = number(s.time_p95_us[i]);
      z["algbw_GBps"] = number(s.algbw[i]);
      z["busbw_GBps"] = number(s.busbw[i]);
      std::int64_t wrong = 0;
      for (std::size_t r = 0; r < s.world; ++r) wrong += s.wrong[i * s.world + r];
      wrong_total += wrong;
      z["wrong_elements"] = wrong;
      sizes.push_back(std::move(z));
    }
    j["sizes"] = std::move(sizes);
    j["wrong_elements"] = wrong_total;
    // Each node's own busbw at the largest size, where the scope is one node.
    Json nodes = Json::array();
    if (s.scope == schema::kScopeIntraNode && s.largest() >= 0) {
      const auto big = static_cast<std::size_t>(s.largest());
      for (const auto& [node, bw] : node_busbw(file, s, big, a.facts.ranks)) {
        Json n;
        n["node"] = node;
        n["host"] = a.facts.host_of_node(node);
        n["bytes"] = s.sizes[big];
        n["busbw_GBps"] = number(bw);
        nodes.push_back(std::move(n));
      }
    }
    j["nodes"] = std::move(nodes);
    sweeps.push_back(std::move(j));
  }
  Json c;
  c["backend"] = d.backend;
  c["wrong_elements"] = d.wrong_total;
  c["sweeps"] = std::move(sweeps);
  Json skipped = Json::array();
  for (const auto& [scope, why] : d.skipped_scopes)
    skipped.push_back({{"scope", scope}, {"reason", why}});
  c["skipped_scopes"] = std::move(skipped);
  c["unreadable"] = d.unreadable;
  return c;
}

Json gemm_json(const GemmFindings& g) {
  if (!g.ran) return nullptr;
  Json shapes = Json::array();
  for (const GemmShapeRow& row : g.rows) {
    Json j;
    j["name"] = row.name;
    j["formats"] = row.formats;
    j["out_dtype"] = row.out_dtype;
    j["measured"] = row.measured;
    j["skip_reason"] = row.measured ? Json(nullptr) : Json(row.skip_reason);
    j["tflops_min"] = row.measured ? number(row.min_tflops) : Json(nullptr);
    j["tflops_median"] = row.measured ? number(row.median_tflops) : Json(nullptr);
    j["tflops_max"] = row.measured ? number(row.max_tflops) : Json(nullptr);
    Json per_rank = Json::array();
    for (double v : row.rank_tflops) per_rank.push_back(number(v));
    j["rank_tflops"] = std::move(per_rank);
    j["slowest_rank"] = index_or_null(row.slowest_rank);
    j["max_rel_err"] = row.measured ? number(row.err) : Json(nullptr);
    j["max_err_over_bound"] = row.measured ? number(row.bound) : Json(nullptr);
    j["hashes"] = row.measured ? Json(row.hashes) : Json(nullptr);
    shapes.push_back(std::move(j));
  }
  Json out;
  out["engine"] = g.engine;
  out["shapes"] = std::move(shapes);
  out["notes"] = g.notes;
  return out;
}

Json train_json(const TrainFindings& t) {
  if (!t.ran) return nullptr;
  const TrainSummary& s = t.summary;
  Json j;
  j["layout"] = s.layout;
  j["steps"] = s.steps;
  j["step_ms"] = {{"median", number(s.step_med_ms)}, {"p95", number(s.step_p95_ms)}};
  j["breakdown_ms"] = {{"fwd", number(s.fwd_ms)},
                       {"bwd", number(s.bwd_ms)},
                       {"tp_comm", number(s.tp_comm_ms)},
                       {"dp_exposed", number(s.dp_exposed_ms)},
                       {"dp_communication", number(s.dp_span_ms)},
                       {"optim", number(s.optim_ms)},
                       {"other", number(s.other_ms)}};
  j["overlap"] = s.overlap;
  j["dp"] = s.dp;
  j["overlap_efficiency"] = s.dp > 1 ? number(s.overlap_efficiency) : Json(nullptr);
  j["tokens_per_s"] = number(s.tokens_per_s);
  j["tflops_per_rank"] = number(s.rank_tflops);
  j["mfu"] = s.peak_tflops > 0 ? number(s.mfu) : Json(nullptr);
  j["mfu_peak_tflops"] = s.peak_tflops > 0 ? number(s.peak_tflops) : Json(nullptr);
  j["mfu_peak_source"] = s.peak_tflops > 0 ? Json(s.peak_source) : Json(nullptr);
  j["slowest_rank"] = index_or_null(s.slowest_rank);
  j["slowest_compute_ms"] = number(s.slowest_compute_ms);
  // Who the others waited for at the DP reduction: only when there is one (dp > 1).
  const bool reduced = s.dp > 1;
  j["waited_for_rank"] = reduced ? index_or_null(s.waited_for_rank) : Json(nullptr);
  j["waited_for_steps"] = reduced ? Json(s.waited_for_steps) : Json(nullptr);
  j["waited_for_ms"] = reduced ? number(s.waited_for_ms) : Json(nullptr);
  j["memory_budget_GiB"] = number(s.memory_gib);
  if (s.gpu_hour_usd > 0) {
    j["cost"] = {{"gpu_hour_usd", number(s.gpu_hour_usd)},
                 {"gpus", s.world},
                 {"usd_per_step", number(s.usd_per_step)},
                 {"usd_per_million_tokens", number(s.usd_per_million_tokens)}};
  } else {
    j["cost"] = nullptr;
  }
  return j;
}

// Medians over the trials: per device for each test, per node the pair matrices [src][dst].
Json devices_json(const DevicesFindings& d) {
  if (!d.ran) return nullptr;
  Json j;
  j["path"] = d.path;
  j["trials"] = d.trials;
  j["pairs"] = d.pairs_setting;
  Json tests = Json::object();
  for (const DevicesTest& t : d.tests) {
    Json alone = Json::array(), together = Json::array();
    for (std::size_t r = 0; r < d.world; ++r) {
      std::vector<double> a, g;
      for (std::size_t i = 0; i < d.trials; ++i) {
        if (!std::isnan(t.alone[i * d.world + r])) a.push_back(t.alone[i * d.world + r]);
        if (!std::isnan(t.together[i * d.world + r])) g.push_back(t.together[i * d.world + r]);
      }
      alone.push_back(number(a.empty() ? std::nan("") : median(a)));
      together.push_back(number(g.empty() ? std::nan("") : median(g)));
    }
    tests[t.name] = {{"counted", t.counted},
                     {"alone_GBps", std::move(alone)},
                     {"together_GBps", std::move(together)}};
  }
  j["tests"] = std::move(tests);
  Json nodes = Json::array();
  for (const DevicesNode& n : d.nodes) {
    Json node = {{"node", n.node}, {"ranks", n.ranks}};
    for (const PairMatrix& m : n.modes) {
      Json rows = Json::array();
      for (std::size_t s = 0; s < m.g; ++s) {
        Json row = Json::array();
        for (std::size_t t = 0; t < m.g; ++t) row.push_back(number(m.median(s, t)));
        rows.push_back(std::move(row));
      }
      node[m.mode + "_GBps"] = std::move(rows);
    }
    nodes.push_back(std::move(node));
  }
  j["nodes"] = std::move(nodes);
  return j;
}

Json checkpoint_json(const CheckpointFindings& c) {
  if (!c.ran) return nullptr;
  const CheckpointSummary& s = c.summary;
  Json j;
  j["layout"] = s.layout;
  j["api"] = s.api;
  j["fs_type"] = s.fs_type;
  j["dir"] = s.dir;
  j["iters"] = s.iters;
  j["bytes_per_rank"] = number(s.bytes_per_rank);
  j["total_bytes"] = number(s.total_bytes);
  j["write_GBps"] = number(s.write_gbps);
  j["read_GBps"] = number(s.read_gbps);
  j["restore_s"] = number(s.restore_s);
  j["per_rank_s"] = {{"open", number(s.open_s)},
                     {"write", number(s.write_s)},
                     {"fsync", number(s.fsync_s)},
                     {"close", number(s.close_s)},
                     {"read", number(s.read_s)}};
  j["slowest_writer_rank"] = index_or_null(s.slowest_writer);
  j["slowest_reader_rank"] = index_or_null(s.slowest_reader);
  j["kept"] = s.kept.empty() ? Json(nullptr) : Json(s.kept);
  if (s.async) {
    j["async"] = {{"blocked_s", number(s.blocked_s)},
                  {"background_write_s", number(s.background_write_s)},
                  {"step_ms_before", number(s.step_before_ms)},
                  {"step_ms_during", number(s.step_during_ms)},
                  {"steps_during", number(s.steps_during)}};
  } else {
    j["async"] = nullptr;
  }
  return j;
}

}  // namespace

std::string format_json(const RunFile& file, const RunAnalysis& a) {
  const Verdict& v = a.verdict;
  Json report;
  report["report"] = "shakedown";
  report["report_version"] = kReportVersion;
  report["run"] = run_json(file, a);
  Json verdict;
  verdict["status"] = verdict_status(v);
  verdict["exit_code"] = static_cast<int>(v.code);
  verdict["headline"] = v.headline;
  verdict["tested"] = v.tested;
  verdict["stored"] = v.stored;
  verdict["checks"] = {
      {"passed", v.passed}, {"warned", v.warned}, {"failed", v.failed}, {"skipped", v.skipped}};
  report["verdict"] = std::move(verdict);
  report["topology"] = topology_json(a.facts);
  Json checks = Json::array();
  for (const CheckGroup& g : group_checks(v.findings)) {
    for (const Finding* f : g.findings) checks.push_back(finding_json(*f));
  }
  report["checks"] = std::move(checks);
  report["devices"] = devices_json(a.devices);
  report["collectives"] = collectives_json(file, a);
  report["gemm"] = gemm_json(a.gemm);
  report["train"] = train_json(a.train);
  report["checkpoint"] = checkpoint_json(a.checkpoint);
  Json drain = Json::array();
  for (const DrainEntry& e : drain_list(v.findings)) {
    drain.push_back({{"host", e.host},
                     {"nodes", e.nodes},
                     {"reason", e.reason},
                     {"command", scontrol_drain(e)}});
  }
  report["drain"] = std::move(drain);
  // Strings from a damaged file (or a host's odd name) may not be UTF-8: replaced, not thrown.
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string format_compare_json(const Comparison& c) {
  Json j;
  j["report_version"] = kReportVersion;
  j["kind"] = "compare";
  j["before"] = c.before_path;
  j["after"] = c.after_path;
  j["verdict"] = c.verdict_name();
  j["exit_code"] = c.exit_code();
  j["alpha"] = c.alpha;
  j["correction"] = "bonferroni";
  j["alpha_per_item"] = c.alpha_per_item;
  j["min_effect"] = c.min_effect;
  j["min_effect_per_rank"] = std::max(c.min_effect, c.min_effect_per_rank);
  j["counts"] = {{"judged", c.judged},
                 {"slower", c.slower},
                 {"faster", c.faster},
                 {"unchanged", c.judged - c.slower - c.faster},
                 {"not_judged", c.not_judged},
                 {"slower_places", c.slower_groups},
                 {"faster_places", c.faster_groups}};
  j["warnings"] = c.warnings;
  j["only_in_before"] = c.only_in_before;
  j["only_in_after"] = c.only_in_after;
  j["not_compared"] = c.not_compared;
  Json places = Json::array();
  for (const CompareGroup& g : c.groups) {
    places.push_back({{"place", g.name},
                      {"phase", g.phase},
                      {"per_rank_or_node", g.per_place},
                      {"result", result_name(g.result)},
                      {"ratio", number(g.ratio)},
                      {"p", number(g.p)},
                      {"judged", g.judged},
                      {"slower", g.slower},
                      {"faster", g.faster},
                      {"changed", g.changed}});
  }
  j["places"] = std::move(places);
  Json items = Json::array();
  for (const CompareItem& i : c.items) {
    const bool judged = i.result != CompareItem::Result::kNotJudged;
    items.push_back({{"phase", i.phase},
                     {"what", i.what},
                     {"size", text_or_null(i.size)},
                     {"where", text_or_null(i.where)},
                     {"place", i.group},
                     {"result", result_name(i.result)},
                     {"n_before", i.n_before},
                     {"n_after", i.n_after},
                     {"unit", i.unit},
                     {"before", judged ? number(i.before_us) : Json(nullptr)},
                     {"after", judged ? number(i.after_us) : Json(nullptr)},
                     {"ratio", judged ? number(i.ratio) : Json(nullptr)},
                     {"ratio_lo", judged ? number(i.lo) : Json(nullptr)},
                     {"ratio_hi", judged ? number(i.hi) : Json(nullptr)},
                     {"p", judged ? number(i.p) : Json(nullptr)},
                     {"not_judged_why", judged ? Json(nullptr) : Json(i.not_judged_why)}});
  }
  j["items"] = std::move(items);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shakedown
