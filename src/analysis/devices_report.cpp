#include "analysis/devices_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "record/schema.hpp"

namespace shakedown {

namespace {

namespace d = schema::devices;

// Seconds per GB (time grows with slowness, as find_stragglers wants), NaN stays NaN.
double per_gb(double gbps_value) {
  return gbps_value > 0 ? 1.0 / gbps_value : kNaN;
}

// Where a minimum comes from: the config key when set, else the platform's figure.
struct Minimum {
  double value = 0;
  std::string source;  // "devices.min_memory_GBps", "platform h200-sxm"
};
Minimum minimum(const RunFacts& facts, double configured, const std::string& key,
                double Platform::*field) {
  if (configured > 0) return {configured, "devices." + key};
  if (facts.platform && (*facts.platform).*field > 0) {
    return {(*facts.platform).*field, "platform " + facts.platform->name};
  }
  return {};
}

DevicesFindings read_devices(const RunFile& f) {
  DevicesFindings out;
  out.ran = true;
  const std::string g = schema::kDevicesGroup;
  out.path = f.attr_string(g, d::kAttrPath);
  out.pairs_setting = f.attr_string(g, d::kAttrPairs);
  out.trials = static_cast<std::size_t>(f.attr_int64(g, d::kAttrTrials));
  out.bytes = static_cast<double>(f.attr_int64(g, d::kAttrBytes));
  out.copy_bytes = static_cast<double>(f.attr_int64(g, d::kAttrCopyBytes));
  const std::string test_list = f.attr_string(g, d::kAttrTests);
  for (const std::string_view view : split(test_list, ',')) {
    const std::string name(view);
    const std::string path = schema::devices_memory_group(name);
    if (!f.has(path)) continue;  // the run ended before this test
    DevicesTest t;
    t.name = name;
    t.counted = f.attr_string(path, d::kAttrCounted);
    t.bytes_counted = f.attr_double(path, d::kAttrBytesCounted);
    std::vector<std::uint64_t> dims;
    t.alone = f.read(path, d::kAloneGBps, &dims);
    t.together = f.read(path, d::kTogetherGBps);
    if (dims.size() != 2 || dims[0] != out.trials || t.together.size() != t.alone.size()) {
      throw RuntimeFault(path + ": not [trials, world] (a damaged file)");
    }
    out.world = dims[1];
    out.tests.push_back(std::move(t));
  }
  if (f.has(d::kFreeBytes.path(g))) {
    out.free_bytes = f.read(g, d::kFreeBytes);
    out.total_bytes = f.read(g, d::kTotalBytes);
  }
  if (f.has(d::kPcieCurrentGTs.path(g))) {
    out.pcie_cur_gts = f.read(g, d::kPcieCurrentGTs);
    out.pcie_max_gts = f.read(g, d::kPcieMaxGTs);
    out.pcie_cur_w = f.read(g, d::kPcieCurrentWidth);
    out.pcie_max_w = f.read(g, d::kPcieMaxWidth);
  }
  if (f.has(d::kNicPcieCurrentGTs.path(g))) {
    out.nic_cur_gts = f.read(g, d::kNicPcieCurrentGTs);
    out.nic_max_gts = f.read(g, d::kNicPcieMaxGTs);
    out.nic_cur_w = f.read(g, d::kNicPcieCurrentWidth);
    out.nic_max_w = f.read(g, d::kNicPcieMaxWidth);
  }
  // Each group's four [world] datasets alike, and as long as free_bytes when it is there.
  for (const auto& group :
       {std::array{&out.pcie_cur_gts, &out.pcie_max_gts, &out.pcie_cur_w, &out.pcie_max_w},
        std::array{&out.nic_cur_gts, &out.nic_max_gts, &out.nic_cur_w, &out.nic_max_w}}) {
    const std::size_t n = group[0]->size();
    for (const auto* v : group) {
      if (v->size() != n || (n > 0 && !out.free_bytes.empty() && n != out.free_bytes.size())) {
        throw RuntimeFault("/devices: PCIe link datasets not [world] (a damaged file)");
      }
    }
  }
  const std::string nodes = "/devices/nodes";
  if (f.has(nodes)) {
    for (const std::string& child : f.children(nodes)) {
      const std::string path = nodes + "/" + child;
      DevicesNode n;
      n.node = static_cast<int>(f.attr_int64(path, d::kAttrNode));
      for (std::int64_t r : f.read(path, d::kNodeRanks)) n.ranks.push_back(static_cast<int>(r));
      for (std::size_t s = 0; s < n.ranks.size(); ++s) {
        const std::string key = d::kAttrDevicePrefix + std::to_string(s);
        n.described.push_back(f.has_attr(path, key) ? f.attr_string(path, key) : "");
      }
      n.refused = f.attr_string(path, d::kAttrRefused);
      const std::size_t g_size = n.ranks.size();
      for (const auto& [mode, spec] : {std::pair{"unidirectional", &d::kUnidirectionalGBps},
                                       std::pair{"bidirectional", &d::kBidirectionalGBps},
                                       std::pair{"concurrent", &d::kConcurrentGBps}}) {
        if (!f.has(spec->path(path))) continue;
        PairMatrix m;
        m.mode = mode;
        m.g = g_size;
        m.gbps = f.read(path, *spec);
        m.trials = g_size == 0 ? 0 : m.gbps.size() / (g_size * g_size);
        if (m.trials * g_size * g_size != m.gbps.size()) {
          throw RuntimeFault(path + ": a pair matrix not [trials, G, G] (a damaged file)");
        }
        n.modes.push_back(std::move(m));
      }
      if (!n.modes.empty()) {
        const PairMatrix& uni = n.modes.front();
        for (std::size_t s = 0; s < uni.g; ++s) {
          for (std::size_t t = 0; t < uni.g; ++t) {
            n.pairs_measured += std::isnan(uni.median(s, t)) ? 0 : 1;
          }
        }
      }
      out.pairs_measured += n.pairs_measured;
      out.nodes_with_pairs += n.pairs_measured > 0 ? 1 : 0;
      out.nodes.push_back(std::move(n));
    }
    std::sort(out.nodes.begin(), out.nodes.end(),
              [](const DevicesNode& a, const DevicesNode& b) { return a.node < b.node; });
  }
  return out;
}

std::string slot_name(const RunFacts& facts, const DevicesNode& n, int slot) {
  const int rank = n.ranks[static_cast<std::size_t>(slot)];
  return "slot " + std::to_string(slot) + " (" + facts.rank_name(rank) + ")";
}

void memory_checks(const DevicesFindings& dv, const RunFacts& facts, std::vector<Finding>& out) {
  const DevicesConfig& cfg = facts.config.devices;
  const bool gpu = dv.path == "cuda";
  const std::size_t trials = dv.trials, world = dv.world;
  // Against the minimums.
  bool judged = false;
  for (const DevicesTest& t : dv.tests) {
    const bool host_copy = t.name.rfind("h2d", 0) == 0 || t.name.rfind("d2h", 0) == 0;
    if (t.name.find("bidir") != std::string::npos) continue;  // not held to the one-way figure
    if (t.name == "ce_copy") continue;  // copy engines run below kernels: no figure of its own
    const Minimum min =
        host_copy ? minimum(facts, cfg.min_host_GBps, "min_host_GBps", &Platform::devices_host_GBps)
                  : minimum(facts, cfg.min_memory_GBps, "min_memory_GBps",
                            &Platform::devices_memory_GBps);
    if (min.value <= 0 || (!gpu && min.source.rfind("platform", 0) == 0)) continue;
    if (!facts.sanitizers.empty()) continue;
    judged = true;
    const std::vector<double> per_rank = column_medians(t.alone, world);
    for (std::size_t r = 0; r < world; ++r) {
      const double got = per_rank[r];
      if (std::isnan(got) || got >= min.value) continue;
      const double ratio = got / min.value;
      Finding f = rank_finding(facts, "devices.memory", below_expected(facts, ratio, 1.0),
                               static_cast<int>(r));
      f.value = got;
      f.expected = min.value;
      f.unit = "GB/s";
      f.message = facts.rank_name(static_cast<int>(r)) + ": its device's " + t.name + " " +
                  gbps_text(got) + " (" + t.counted + ") is " + fixed_text(100 * ratio, 0) +
                  "% of " + min.source + " = " + gbps_text(min.value) +
                  shared_cores_note(facts, ratio, 1.0);
      f.evidence = "median of " + std::to_string(trials) + " trials, the device alone";
      out.push_back(f);
    }
  }
  // Against the peers: time per GB of each test alone.
  const StragglerLimits limits = facts.straggler_limits();
  std::vector<StragglerCase> cases;
  for (const DevicesTest& t : dv.tests) {
    std::vector<double> v(t.alone.size());
    std::transform(t.alone.begin(), t.alone.end(), v.begin(), per_gb);
    cases.push_back({t.name, std::move(v), trials, world, 0});
  }
  const std::string unjudged =
      cannot_judge(cases.size(), trials, world, "devices", limits.alpha, "devices.trials");
  std::string what;
  if (!unjudged.empty()) {
    what = "devices against each other: " + unjudged;
  } else {
    const Stragglers found = find_stragglers(cases, limits);
    const std::vector<StragglerEvidence>& slow = found.named;
    const std::size_t first_named = out.size();
    for (const StragglerEvidence& e : slow) {
      Finding f = rank_finding(facts, "devices.memory", straggler_status(facts, e.excess), e.rank);
      f.value = e.excess;
      f.expected = facts.straggler_slowdown();
      f.unit = "fraction slower";
      f.message = facts.rank_name(e.rank) + ": its " + (gpu ? "GPU" : "host memory and cores") +
                  " are " + fixed_text(100 * e.excess, 0) + "% slower than the other devices in " +
                  std::to_string(e.flagged) + "/" + std::to_string(e.compared) + " tests (" +
                  join(e.cases, ", ") + "), " + p_text(e.p) +
                  (gpu ? ": its memory, clocks or a throttled GPU"
                       : ": its memory channels, NUMA placement or a busy core");
      f.evidence = std::to_string(trials) +
                   " trials per test alone, time per byte, one-sided Mann-Whitney vs the other "
                   "devices, Bonferroni-corrected";
      out.push_back(f);
    }
    std::string together;  // the pass's words when devices were slower only together
    if (!found.together.empty()) {
      const Finding f = slower_together_finding("devices.memory", found.together, nullptr,
                                                "have devices slower than the others'");
      if (!add_together_to_named(out, first_named, "devices.memory", f)) together = f.message;
    }
    what = !slow.empty() ? ""
           : together.empty()
               ? "no device slower than the others (at least " +
                     fixed_text(100 * facts.straggler_slowdown(), 0) +
                     "% beyond their spread, p < 0.01" +
                     few_samples_note(cases.size(), trials, world, limits.alpha, "devices.trials") +
                     ")"
               : together;
  }
  const bool any_failed = std::any_of(out.begin(), out.end(), [](const Finding& f) {
    return f.check == "devices.memory" && f.status != CheckStatus::kPass;
  });
  if (!any_failed) {
    std::string msg = what;
    if (judged) {
      msg += "; every device at or above its minimum";
    } else if (!facts.sanitizers.empty()) {
      msg += "; minimums not judged in a sanitizer build";
    } else {
      msg += gpu ? "; no minimum to hold the numbers to (set devices.min_memory_GBps or use a "
                   "platform with devices figures)"
                 : "; no minimum set (devices.min_memory_GBps)";
    }
    out.push_back(run_finding("devices.memory",
                              unjudged.empty() || judged ? CheckStatus::kPass : CheckStatus::kSkip,
                              msg));
  }
}

void gpu_checks(const DevicesFindings& dv, const RunFacts& facts, std::vector<Finding>& out) {
  if (dv.path != "cuda") return;
  const Minimum min = minimum(facts, facts.config.devices.min_free_GiB, "min_free_GiB",
                              &Platform::devices_min_free_GiB);
  int low = 0;
  for (std::size_t r = 0; r < dv.free_bytes.size(); ++r) {
    const double gib = dv.free_bytes[r] / double(1ull << 30);
    if (min.value <= 0 || std::isnan(gib) || gib >= min.value) continue;
    ++low;
    Finding f = rank_finding(facts, "devices.free_memory", CheckStatus::kFail, static_cast<int>(r));
    f.value = gib;
    f.expected = min.value;
    f.unit = "GiB";
    f.message = facts.rank_name(static_cast<int>(r)) + ": " + fixed_text(gib, 1) +
                " GiB of GPU memory free after the CUDA runtime started, below " + min.source +
                " = " + fixed_text(min.value, 1) +
                " GiB: another process holds memory on it (nvidia-smi), or ECC/row remapping "
                "took some";
    out.push_back(f);
  }
  if (low == 0) {
    out.push_back(run_finding(
        "devices.free_memory", min.value > 0 ? CheckStatus::kPass : CheckStatus::kSkip,
        min.value > 0 ? "every GPU had at least " + fixed_text(min.value, 1) +
                            " GiB free after the runtime started (" + min.source + ")"
                      : "free GPU memory recorded, not judged: set devices.min_free_GiB"));
  }
}

// A link below what it can train to (speed or width), with both maxima read.
bool below_max(double cur, double max, double cw, double mw) {
  return cur < max || cw < mw;
}

std::string link_text(double gts, double width) {
  return general_text(gts, 3) + " GT/s x" + fixed_text(width, 0);
}

// devices.pcie: each GPU's link read while it copied (GPUs lower their link speed when idle),
// and each NIC's, once per host and NIC (its ranks read the same link).
void pcie_checks(const DevicesFindings& dv, const RunFacts& facts, std::vector<Finding>& out) {
  int below = 0, gpus = 0, nics = 0;
  for (std::size_t r = 0; r < dv.pcie_cur_gts.size(); ++r) {
    const double cur = dv.pcie_cur_gts[r], max = dv.pcie_max_gts[r];
    const double cw = dv.pcie_cur_w[r], mw = dv.pcie_max_w[r];
    if (std::isnan(cur) || std::isnan(max)) continue;
    ++gpus;
    if (!below_max(cur, max, cw, mw)) continue;
    ++below;
    Finding f = rank_finding(facts, "devices.pcie", CheckStatus::kFail, static_cast<int>(r));
    f.value = cur;
    f.expected = max;
    f.unit = "GT/s";
    f.message = facts.rank_name(static_cast<int>(r)) + ": its GPU's PCIe link ran at " +
                link_text(cur, cw) + " while copying, of " + link_text(max, mw) +
                " (the most the GPU and its slot's port both support): a link trained down "
                "(reseat the GPU or riser, check the slot)";
    out.push_back(f);
  }
  std::map<std::pair<std::string, std::string>, std::vector<int>> nic_ranks;  // (host, NIC)
  for (std::size_t r = 0; r < dv.nic_cur_gts.size(); ++r) {
    const auto rank = static_cast<int>(r);
    if (std::isnan(dv.nic_cur_gts[r]) || std::isnan(dv.nic_max_gts[r])) continue;
    const std::string nic = r < facts.ranks.size() ? facts.ranks[r].nic : "";
    nic_ranks[{facts.host_of_rank(rank), nic}].push_back(rank);
  }
  for (const auto& [key, ranks] : nic_ranks) {
    ++nics;
    const auto r = static_cast<std::size_t>(ranks.front());
    const double cur = dv.nic_cur_gts[r], max = dv.nic_max_gts[r];
    const double cw = dv.nic_cur_w[r], mw = dv.nic_max_w[r];
    if (!below_max(cur, max, cw, mw)) continue;
    ++below;
    std::vector<std::string> names;
    for (int rank : ranks) names.push_back(std::to_string(rank));
    // A fault of the node's hardware: a node finding whose host is the one to drain.
    Finding f = rank_finding(facts, "devices.pcie", CheckStatus::kFail, ranks.front());
    f.subject_kind = "node";
    f.subject = "node " + std::to_string(f.node);
    f.rank = -1;
    f.value = cur;
    f.expected = max;
    f.unit = "GT/s";
    f.message = (f.node >= 0 ? facts.node_name(f.node) : facts.rank_name(ranks.front())) +
                ": NIC " + (key.second.empty() ? std::string("(unnamed)") : key.second) +
                (ranks.size() == 1 ? " (rank " : " (ranks ") + join(names, ",") +
                "): its PCIe link runs at " + link_text(cur, cw) + ", of " + link_text(max, mw) +
                " (the most the NIC and its slot's port both support): a link trained down "
                "caps every transfer those ranks make over the network (reseat the NIC or "
                "riser, check the slot)";
    out.push_back(f);
  }
  if (below > 0) return;
  std::vector<std::string> read;
  if (gpus > 0) read.push_back(std::to_string(gpus) + " GPU PCIe link(s) while copying");
  if (nics > 0) read.push_back(std::to_string(nics) + " NIC PCIe link(s)");
  if (read.empty()) {
    out.push_back(run_finding("devices.pcie", CheckStatus::kSkip,
                              "no PCIe link (the GPUs' or the ranks' NICs') could be read from "
                              "sysfs"));
    return;
  }
  out.push_back(run_finding("devices.pcie", CheckStatus::kPass,
                            join(read, " and ") + " at their maximum speed and width"));
}

void pair_checks(const DevicesFindings& dv, const RunFacts& facts, std::vector<Finding>& out) {
  const StragglerLimits limits = facts.straggler_limits();
  const Minimum min = dv.path == "cuda"
                          ? minimum(facts, facts.config.devices.min_pair_GBps, "min_pair_GBps",
                                    &Platform::devices_pair_GBps)
                          : Minimum{facts.config.devices.min_pair_GBps, "devices.min_pair_GBps"};
  std::size_t flagged = 0;
  std::vector<std::string> unjudged, together;
  const std::size_t first = out.size();
  for (const DevicesNode& n : dv.nodes) {
    if (!n.refused.empty()) {
      ++flagged;
      Finding f = run_finding("devices.pairs", CheckStatus::kFail,
                              facts.node_name(n.node) + ": pairs not measured: " + n.refused);
      f.subject_kind = "node";
      f.subject = "node " + std::to_string(n.node);
      f.node = n.node;
      f.host = facts.host_of_node(n.node);
      out.push_back(f);
    }
    if (n.pairs_measured == 0) continue;
    const PairMatrix& uni = n.modes.front();
    // The minimum, unidirectional medians.
    if (min.value > 0 && facts.sanitizers.empty()) {
      for (std::size_t s = 0; s < uni.g; ++s) {
        for (std::size_t t = 0; t < uni.g; ++t) {
          const double got = uni.median(s, t);
          if (std::isnan(got) || got >= min.value) continue;
          ++flagged;
          Finding f = run_finding(
              "devices.pairs", below_expected(facts, got / min.value, 1.0),
              facts.node_name(n.node) + ": pair " + slot_name(facts, n, static_cast<int>(s)) +
                  " -> " + slot_name(facts, n, static_cast<int>(t)) + " copies " + gbps_text(got) +
                  " one way, below " + min.source + " = " + gbps_text(min.value));
          f.subject_kind = "link";
          f.subject =
              "node " + std::to_string(n.node) + " " + std::to_string(s) + "->" + std::to_string(t);
          f.value = got;
          f.expected = min.value;
          f.unit = "GB/s";
          f.node = n.node;
          f.host = facts.host_of_node(n.node);
          out.push_back(f);
        }
      }
    }
    const PairOutliers o = pair_outliers(n.modes, limits);
    for (const StragglerEvidence& e : o.devices) {
      ++flagged;
      const int rank = n.ranks[static_cast<std::size_t>(e.rank)];
      Finding f = rank_finding(facts, "devices.pairs", straggler_status(facts, e.excess), rank);
      f.value = e.excess;
      f.expected = facts.straggler_slowdown();
      f.unit = "fraction slower";
      f.message = facts.node_name(n.node) + ": every pair with " + slot_name(facts, n, e.rank) +
                  " is " + fixed_text(100 * e.excess, 0) +
                  "% slower than the node's other pairs (" + join(e.cases, ", ") + "), " +
                  p_text(e.p) +
                  (dv.path == "cuda" ? ": that device's links (NVLink lanes down, its PCIe path), "
                                       "not one pair"
                                     : ": that rank's memory path (its NUMA node, its cores), "
                                       "not one pair");
      f.evidence = "pair copies to and from it vs the node's other devices' pairs";
      out.push_back(f);
    }
    for (const PairOutliers::Pair& p : o.pairs) {
      ++flagged;
      Finding f = run_finding("devices.pairs", straggler_status(facts, p.evidence.excess),
                              facts.node_name(n.node) + ": pair " + slot_name(facts, n, p.src) +
                                  (p.both_ways ? " <-> " : " -> ") + slot_name(facts, n, p.dst) +
                                  " is " + fixed_text(100 * p.evidence.excess, 0) +
                                  "% slower than the node's other pairs " +
                                  (p.both_ways ? "in both directions" : "in this direction only") +
                                  " (" + join(p.evidence.cases, ", ") + "), " +
                                  p_text(p.evidence.p) + ": the link between those two devices");
      f.subject_kind = "link";
      f.subject = "node " + std::to_string(n.node) + " " + std::to_string(p.src) +
                  (p.both_ways ? "<->" : "->") + std::to_string(p.dst);
      f.value = p.evidence.excess;
      f.expected = facts.straggler_slowdown();
      f.unit = "fraction slower";
      f.node = n.node;
      f.host = facts.host_of_node(n.node);
      f.evidence =
          "pair copies vs the node's other pairs, one-sided Mann-Whitney, "
          "Bonferroni-corrected";
      out.push_back(f);
    }
    for (const Finding& f : o.together)
      together.push_back(facts.node_name(n.node) + ": " + f.message);
    if (!o.devices_unjudged.empty() || !o.pairs_unjudged.empty()) {
      unjudged.push_back(facts.node_name(n.node) + ": " +
                         (o.devices_unjudged.empty() ? o.pairs_unjudged : o.devices_unjudged));
    }
  }
  if (dv.nodes_with_pairs == 0) {
    bool several = false;
    for (const DevicesNode& n : dv.nodes) several = several || n.ranks.size() > 1;
    std::string why = dv.pairs_setting == "none" ? "devices.pairs is none"
                      : several ? "no pair could be opened (see the failures above)"
                                : "every node has one device (one rank per node)";
    out.push_back(run_finding("devices.pairs", CheckStatus::kSkip,
                              "the pair matrix was not measured: " + why));
    return;
  }
  // Slots or pairs slower together (shared cores): in the check's one line.
  const std::string together_text = join_limited(together, "; ", 4);
  if (flagged > 0 && !together.empty()) {
    for (std::size_t i = first; i < out.size(); ++i) {
      if (out[i].check == "devices.pairs" && out[i].status != CheckStatus::kPass) {
        out[i].evidence += "; also " + together_text;
      }
    }
  }
  if (flagged == 0) {
    std::string msg = std::to_string(dv.pairs_measured) + " ordered pair(s) on " +
                      std::to_string(dv.nodes_with_pairs) +
                      " node(s): no device's pairs and no pair slower than the node's others";
    if (!unjudged.empty()) msg += " (not compared: " + join(unjudged, "; ") + ")";
    if (!together.empty()) msg += "; " + together_text;
    if (min.value > 0)
      msg += "; every pair at or above " + min.source + " = " + gbps_text(min.value);
    out.push_back(run_finding("devices.pairs",
                              unjudged.size() == dv.nodes_with_pairs && min.value <= 0
                                  ? CheckStatus::kSkip
                                  : CheckStatus::kPass,
                              msg));
  }
}

}  // namespace

double PairMatrix::median(std::size_t src, std::size_t dst) const {
  std::vector<double> v;
  for (std::size_t i = 0; i < trials; ++i) v.push_back(at(i, src, dst));
  return shakedown::median(v);
}

PairOutliers pair_outliers(const std::vector<PairMatrix>& modes, const StragglerLimits& limits) {
  PairOutliers out;
  if (modes.empty()) return out;
  const std::size_t g = modes.front().g;
  const std::size_t trials = modes.front().trials;
  // Devices: each slot's samples are every pair copy to or from it.
  std::vector<StragglerCase> device_cases;
  for (const PairMatrix& m : modes) {
    std::vector<std::vector<double>> per(g);
    for (std::size_t i = 0; i < trials; ++i) {
      for (std::size_t s = 0; s < g; ++s) {
        for (std::size_t t = 0; t < g; ++t) {
          const double v = m.at(i, s, t);
          if (s == t || std::isnan(v)) continue;
          per[s].push_back(per_gb(v));
          per[t].push_back(per_gb(v));
        }
      }
    }
    std::size_t rows = 0;
    for (const auto& p : per) rows = std::max(rows, p.size());
    if (rows == 0) continue;
    std::vector<double> values(rows * g, kNaN);
    for (std::size_t s = 0; s < g; ++s) {
      for (std::size_t i = 0; i < per[s].size(); ++i) values[i * g + s] = per[s][i];
    }
    device_cases.push_back({m.mode, std::move(values), rows, g, 0});
  }
  if (device_cases.empty()) return out;
  std::set<int> flagged_devices;
  out.devices_unjudged = cannot_judge(device_cases.size(), device_cases.front().iters, g, "devices",
                                      limits.alpha, "devices.trials");
  if (out.devices_unjudged.empty()) {
    Stragglers found = find_stragglers(device_cases, limits);
    out.devices = std::move(found.named);
    if (!found.together.empty()) {
      out.together.push_back(slower_together_finding("devices.pairs", found.together, [](int slot) {
        return "the pairs of slot " + std::to_string(slot);
      }));
    }
    for (const auto& e : out.devices) flagged_devices.insert(e.rank);
  }
  // Pairs that touch no flagged device, against each other.
  std::vector<std::pair<int, int>> members;
  for (std::size_t s = 0; s < g; ++s) {
    for (std::size_t t = 0; t < g; ++t) {
      if (s == t || flagged_devices.count(static_cast<int>(s)) ||
          flagged_devices.count(static_cast<int>(t))) {
        continue;
      }
      if (!std::isnan(modes.front().median(s, t))) {
        members.emplace_back(static_cast<int>(s), static_cast<int>(t));
      }
    }
  }
  out.pairs_unjudged =
      cannot_judge(modes.size(), trials, members.size(), "pairs", limits.alpha, "devices.trials");
  if (!out.pairs_unjudged.empty()) return out;
  std::vector<StragglerCase> pair_cases;
  for (const PairMatrix& m : modes) {
    std::vector<double> values(trials * members.size(), kNaN);
    bool any = false;
    for (std::size_t i = 0; i < trials; ++i) {
      for (std::size_t k = 0; k < members.size(); ++k) {
        const double v = m.at(i, static_cast<std::size_t>(members[k].first),
                              static_cast<std::size_t>(members[k].second));
        values[i * members.size() + k] = per_gb(v);
        any = any || !std::isnan(v);
      }
    }
    if (any) pair_cases.push_back({m.mode, std::move(values), trials, members.size(), 0});
  }
  const Stragglers slow = find_stragglers(pair_cases, limits);
  if (!slow.together.empty()) {
    out.together.push_back(slower_together_finding("devices.pairs", slow.together, [&](int k) {
      const auto& [src, dst] = members[static_cast<std::size_t>(k)];
      return "pair " + std::to_string(src) + "->" + std::to_string(dst);
    }));
  }
  std::map<std::pair<int, int>, StragglerEvidence> by_pair;
  for (const auto& e : slow.named) by_pair[members[static_cast<std::size_t>(e.rank)]] = e;
  for (const auto& [pair, e] : by_pair) {
    const auto reverse = by_pair.find({pair.second, pair.first});
    const bool both = reverse != by_pair.end();
    if (both && pair.first > pair.second) continue;  // said once
    out.pairs.push_back({pair.first, pair.second, e, both});
  }
  return out;
}

DevicesFindings devices_findings(const RunFile& file, const RunFacts& facts) {
  if (!file.has(schema::kDevicesGroup)) {
    DevicesFindings none;
    if (facts.asked_for("devices")) none.findings.push_back(not_recorded(facts, "devices"));
    return none;
  }
  DevicesFindings dv = read_devices(file);
  std::vector<std::string> names;
  for (const auto& t : dv.tests) names.push_back(t.name);
  if (dv.tests.empty()) {
    dv.findings.push_back(run_finding(
        "devices.coverage",
        facts.meta.status == schema::kStatusComplete ? CheckStatus::kFail : CheckStatus::kSkip,
        "the devices phase recorded no test"));
    return dv;
  }
  dv.findings.push_back(run_finding(
      "devices.coverage", CheckStatus::kPass,
      (dv.path == "cuda" ? "GPU" : "host") + std::string(" tests ") + join(names, ", ") + " on " +
          std::to_string(dv.world) + " device(s), alone and all of a node's together, " +
          std::to_string(dv.trials) + " trials each; " +
          (dv.pairs_measured > 0 ? std::to_string(dv.pairs_measured) + " ordered pair(s) on " +
                                       std::to_string(dv.nodes_with_pairs) +
                                       " node(s), unidirectional, bidirectional and all at once"
                                 : std::string("no pair measured"))));
  memory_checks(dv, facts, dv.findings);
  gpu_checks(dv, facts, dv.findings);
  pcie_checks(dv, facts, dv.findings);
  pair_checks(dv, facts, dv.findings);
  return dv;
}

std::string devices_title(const DevicesFindings& dv) {
  std::vector<std::string> names;
  for (const auto& t : dv.tests) names.push_back(t.name);
  return "devices (" + dv.path + ": " + join(names, ", ") + " over " +
         format_size(static_cast<std::uint64_t>(dv.bytes)) + " buffers, copies of " +
         format_size(static_cast<std::uint64_t>(dv.copy_bytes)) + "; " + std::to_string(dv.trials) +
         " trials; pairs " + dv.pairs_setting + ")";
}

std::string format_devices(const DevicesFindings& dv, const RunFacts& facts, bool detail) {
  if (!dv.ran) return "";
  std::ostringstream os;
  const std::size_t trials = dv.trials, world = dv.world;
  if (detail) {
    os << "  bytes counted: copy and triad read + written (STREAM); host<->device and pairs: "
          "bytes copied (nvbandwidth); medians of the trials\n";
  }
  // Per test: the median device alone, the slowest, and a node's devices all at once.
  std::vector<std::string> alone, together;
  for (const DevicesTest& t : dv.tests) {
    const std::vector<double> per_rank = column_medians(t.alone, world);
    std::vector<double> node_total;
    std::map<int, std::vector<double>> by_node;  // per node: sum over its ranks, per trial
    for (std::size_t i = 0; i < trials; ++i) {
      std::map<int, double> sum;
      for (std::size_t r = 0; r < world; ++r) {
        const double v = t.together[i * world + r];
        if (!std::isnan(v)) sum[facts.node_of_rank(static_cast<int>(r))] += v;
      }
      for (const auto& [node, s] : sum) by_node[node].push_back(s);
    }
    for (auto& [node, v] : by_node) node_total.push_back(median(v));
    const auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
    if (detail) {
      os << "  " << t.name << ": " << gbps_text(median(per_rank)) << " per device alone ("
         << general_text(*lo, 3) << " .. " << general_text(*hi, 3) << " over " << world
         << "); per node with all at once " << gbps_text(median(node_total)) << '\n';
    } else {
      alone.push_back(t.name + " " + general_text(median(per_rank), 3) + " (slowest " +
                      general_text(*lo, 3) + ")");
      together.push_back(t.name + " " + general_text(median(node_total), 3));
    }
  }
  if (!detail) {
    os << "  per device alone, GB/s: " << join(alone, ", ") << "; per node all at once "
       << join(together, ", ") << '\n';
  }
  if (!dv.free_bytes.empty() && dv.path == "cuda") {
    os << "  GPU memory free after the runtime started: "
       << fixed_text(median(dv.free_bytes) / double(1ull << 30), 1) << " GiB (median)\n";
  }
  // Pairs: without --detail one line over every node (each mode's range of pair medians).
  std::map<std::string, std::pair<double, double>> range;
  std::vector<std::string> order;
  for (const DevicesNode& n : dv.nodes) {
    if (n.pairs_measured == 0) continue;
    std::vector<std::string> parts;
    for (const PairMatrix& m : n.modes) {
      std::vector<double> med;
      for (std::size_t s = 0; s < m.g; ++s) {
        for (std::size_t t = 0; t < m.g; ++t) {
          const double v = m.median(s, t);
          if (!std::isnan(v)) med.push_back(v);
        }
      }
      if (med.empty()) continue;
      const auto [lo, hi] = std::minmax_element(med.begin(), med.end());
      parts.push_back(m.mode + " " + general_text(*lo, 3) + " .. " + general_text(*hi, 3));
      if (!range.count(m.mode)) {
        order.push_back(m.mode);
        range[m.mode] = {*lo, *hi};
      } else {
        range[m.mode].first = std::min(range[m.mode].first, *lo);
        range[m.mode].second = std::max(range[m.mode].second, *hi);
      }
    }
    if (!detail) continue;
    os << "  " << facts.node_name(n.node) << " pairs: " << join(parts, ", ") << " GB/s\n";
    for (const PairMatrix& m : n.modes) {
      os << "    " << m.mode << " GB/s (row: source slot, column: destination slot)\n"
         << "           ";
      for (std::size_t t = 0; t < m.g; ++t) {
        const std::string head = "dst " + std::to_string(t);
        os << std::string(head.size() < 8 ? 8 - head.size() : 1, ' ') << head;
      }
      os << '\n';
      for (std::size_t s = 0; s < m.g; ++s) {
        const std::string head = "src " + std::to_string(s);
        os << "      " << head << std::string(head.size() < 5 ? 5 - head.size() : 0, ' ');
        for (std::size_t t = 0; t < m.g; ++t) {
          std::string cell = s == t ? "-" : fixed_text(m.median(s, t), 2);
          os << std::string(cell.size() < 8 ? 8 - cell.size() : 1, ' ') << cell;
        }
        os << '\n';
      }
    }
    for (std::size_t s = 0; s < n.described.size(); ++s) {
      os << "    slot " << s << ": " << facts.rank_name(n.ranks[s]) << ", " << n.described[s]
         << '\n';
    }
  }
  if (!detail && dv.nodes_with_pairs > 0) {
    std::vector<std::string> parts;
    for (const std::string& mode : order) {
      parts.push_back(mode + " " + general_text(range[mode].first, 3) + " .. " +
                      general_text(range[mode].second, 3));
    }
    os << "  pairs on " << dv.nodes_with_pairs << " node(s), GB/s: " << join(parts, ", ")
       << " (--detail: each node's matrix)\n";
  }
  return os.str();
}

}  // namespace shakedown
