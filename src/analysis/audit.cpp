#include "analysis/audit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/checks.hpp"
#include "analysis/number_text.hpp"
#include "core/strings.hpp"
#include "topology/node_facts.hpp"

namespace shakedown {

namespace {

// ---- reading values ----

std::vector<long> version_parts(const std::string& text) {
  std::vector<long> parts;
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) == 0) ++i;
  if (i == text.size()) return parts;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) != 0) ++j;
    if (j == i) break;
    parts.push_back(std::stol(text.substr(i, std::min<std::size_t>(j - i, 9))));
    if (j >= text.size() || text[j] != '.') break;
    i = j + 1;
  }
  return parts;
}

std::vector<std::string> split_text(const std::string& text, char separator) {
  std::vector<std::string> out;
  for (std::string_view part : split(text, separator)) {
    const std::string_view t = trim(part);
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

// One node's fields and facts by key, and where it is.
struct NodeView {
  int index = 0;
  std::string name;  // "node 3 (host gpu-14)"
  std::string host;
  const NodeInventory* inv = nullptr;
  std::map<std::string, std::string> values;  // fixed fields and facts
  std::map<std::string, std::string> sources;

  const std::string* get(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? nullptr : &it->second;
  }
  std::string text(const std::string& key) const {
    const std::string* v = get(key);
    return v == nullptr ? std::string() : *v;
  }
  bool known(const std::string& key) const {
    const std::string* v = get(key);
    return v != nullptr && !v->empty() && !is_unknown(*v) && !v->starts_with("unavailable") &&
           *v != "not built";
  }
  int gpu_count() const { return static_cast<int>(inv->gpus.size()); }
  bool has_ib() const {
    return std::any_of(inv->nics.begin(), inv->nics.end(),
                       [](const NicInfo& n) { return n.kind == "infiniband"; });
  }
  // Keys starting with `prefix` and ending with `suffix`.
  std::vector<std::pair<std::string, std::string>> matching(const std::string& prefix,
                                                            const std::string& suffix) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = values.lower_bound(prefix); it != values.end() && it->first.starts_with(prefix);
         ++it) {
      if (it->first.ends_with(suffix)) out.emplace_back(it->first, it->second);
    }
    return out;
  }
};

std::vector<NodeView> views(const std::vector<NodeInventory>& nodes, const RunFacts& facts) {
  std::vector<NodeView> out;
  for (const NodeInventory& n : nodes) {
    NodeView v;
    v.index = n.node_index;
    v.inv = &n;
    v.host = facts.host_of_node(n.node_index);
    if (v.host.empty()) v.host = n.hostname;
    v.name = "node " + std::to_string(n.node_index) + " (host " + v.host +
             (facts.meta.virtual_nodes > 0 ? ", virtual" : "") + ")";
    for (const InventoryField& f : inventory_fields(n)) {
      v.values[f.key] = f.value;
      v.sources[f.key] = "inventory";
    }
    for (const NodeFact& f : n.facts) {
      v.values[f.key] = f.value;
      v.sources[f.key] = f.source;
    }
    out.push_back(std::move(v));
  }
  return out;
}

Finding node_finding(const NodeView& v, std::string check, CheckStatus status, std::string message) {
  Finding f;
  f.check = std::move(check);
  f.status = status;
  f.subject_kind = "node";
  f.subject = "node " + std::to_string(v.index);
  f.node = v.index;
  f.host = v.host;
  f.message = v.name + ": " + std::move(message);
  return f;
}

// ---- audit.compatibility ----

// The least driver for CUDA minor version compatibility within a major release (NVIDIA's CUDA
// Compatibility guide, "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version
// Compatibility", Linux): below it nothing of that major runs.
std::optional<std::string> minor_compat_driver(long cuda_major) {
  if (cuda_major == 11) return "450.80.02";
  if (cuda_major == 12) return "525.60.13";
  if (cuda_major == 13) return "580.65.06";
  return std::nullopt;
}

bool arch_listed(const std::string& archs, long major, long minor, bool* jit) {
  *jit = false;
  bool exact = false, lower_same_major = false, lower = false;
  for (const std::string& a : split_text(archs, ',')) {
    if (a == "all" || a == "all-major" || a == "native") return true;
    const std::vector<long> digits = version_parts(a);
    if (digits.empty()) continue;
    const long code = digits.front();  // "90", "90a", "90-real"
    const long am = code / 10, an = code % 10;
    if (am == major && an == minor) exact = true;
    if (am == major && an < minor) lower_same_major = true;
    if (am < major) lower = true;
  }
  if (exact || lower_same_major) return true;
  // Only an older major's code: the PTX of it is compiled for this GPU at first use (if the
  // build kept PTX, as CMake's plain "90" does).
  *jit = lower;
  return false;
}

void compatibility(const std::vector<NodeView>& nodes, const RunFacts& facts,
                   std::vector<Finding>& out) {
  // The config's minimums, else the platform's.
  AuditConfig want = facts.config.audit;
  std::string driver_from = "audit.driver_min", nccl_from = "audit.nccl_min";
  if (want.driver_min.empty() && facts.platform && !facts.platform->driver_min.empty()) {
    want.driver_min = facts.platform->driver_min;
    driver_from = "platform " + facts.platform->name;
  }
  if (want.nccl_min.empty() && facts.platform && !facts.platform->nccl_min.empty()) {
    want.nccl_min = facts.platform->nccl_min;
    nccl_from = "platform " + facts.platform->name;
  }
  std::size_t gpu_nodes = 0, gpus = 0;
  std::vector<Finding> bad;
  for (const NodeView& v : nodes) {
    const bool has_gpus = v.gpu_count() > 0 || (v.known("gpu.pci_count") && v.text("gpu.pci_count") != "0");
    if (has_gpus) ++gpu_nodes;
    gpus += static_cast<std::size_t>(v.gpu_count());
    const auto fail = [&](const std::string& m) {
      bad.push_back(node_finding(v, "audit.compatibility", CheckStatus::kFail, m));
    };
    const auto warn = [&](const std::string& m) {
      bad.push_back(node_finding(v, "audit.compatibility", CheckStatus::kWarn, m));
    };
    // CUDA: the runtime built in against what the driver supports.
    const std::string runtime = v.text("cuda.runtime"), driver_cuda = v.text("cuda.driver");
    const std::string driver = v.text("gpu.driver");
    if (has_gpus && v.known("cuda.runtime") && !v.known("cuda.driver")) {
      fail("the node has NVIDIA GPUs but no usable driver (" + driver_cuda +
           "): install or reload the NVIDIA driver, check nvidia-smi");
    } else if (v.known("cuda.runtime") && v.known("cuda.driver")) {
      const auto cmp = compare_versions(driver_cuda, runtime);
      const std::vector<long> rt = version_parts(runtime), dr = version_parts(driver_cuda);
      if (cmp && *cmp < 0) {
        const auto least = rt.empty() ? std::nullopt : minor_compat_driver(rt.front());
        if (dr.empty() || rt.empty() || dr.front() != rt.front()) {
          fail("the driver supports CUDA " + driver_cuda + ", older than the CUDA " + runtime +
               " runtime shakedown was built with (another major release): upgrade the driver "
               "to one for CUDA " + runtime + " or later");
        } else if (least && v.known("gpu.driver") && compare_versions(driver, *least) < 0) {
          fail("driver " + driver + " is below " + *least + ", the least any CUDA " +
               std::to_string(rt.front()) + ".x runtime runs on (minor version compatibility)");
        } else {
          warn("the driver supports CUDA " + driver_cuda + ", the runtime is " + runtime +
               ": it runs by minor version compatibility (PTX newer than the driver cannot be "
               "compiled, features of the newer release are missing); a driver for CUDA " +
               runtime + " removes the doubt");
        }
      }
    }
    if (!want.driver_min.empty() && v.known("gpu.driver") &&
        compare_versions(driver, want.driver_min) < 0) {
      fail("driver " + driver + " is older than " + driver_from + "'s " + want.driver_min +
           ": update the driver or drain the node");
    } else if (!want.driver_min.empty() && has_gpus && !v.known("gpu.driver")) {
      warn("the driver version could not be read (" + v.text("gpu.driver") + "), so " +
           driver_from + "'s " + want.driver_min + " was not checked");
    }
    // NCCL: the library loaded at run time against the one compiled against.
    const std::string built = v.text("build.nccl"), loaded = v.text("nccl");
    if (v.known("build.nccl") && v.known("nccl")) {
      const std::vector<long> b = version_parts(built), l = version_parts(loaded);
      if (!b.empty() && !l.empty() && b.front() != l.front()) {
        fail("NCCL " + loaded + " is loaded, shakedown was built against " + built +
             " (another major version): point LD_LIBRARY_PATH at NCCL " +
             std::to_string(b.front()) + ".x");
      } else if (compare_versions(loaded, built) < 0) {
        warn("NCCL " + loaded + " is loaded, older than the " + built +
             " shakedown was built against: calls newer than " + loaded + " fail");
      }
    }
    if (!want.nccl_min.empty() && v.known("nccl") && compare_versions(loaded, want.nccl_min) < 0) {
      fail("NCCL " + loaded + " is older than " + nccl_from + "'s " + want.nccl_min);
    }
    // Each GPU: FP8, the build's architectures, MIG.
    const std::string archs = v.text("build.cuda_archs");
    for (const GpuInfo& g : v.inv->gpus) {
      const std::string key = "gpu." + std::to_string(g.index);
      const std::string label = "GPU " + std::to_string(g.index) + " (" + g.name + ")";
      if (v.known(key + ".compute_capability")) {
        const std::vector<long> cc = version_parts(v.text(key + ".compute_capability"));
        if (cc.size() >= 2) {
          if (cc[0] * 10 + cc[1] < 89) {
            warn(label + " has compute capability " + v.text(key + ".compute_capability") +
                 ": no FP8 tensor cores (8.9 or later), so FP8 GEMMs cannot run there");
          } else if (v.known("cublaslt.version") &&
                     compare_versions(v.text("cublaslt.version"), "11.11") < 0) {
            fail("cuBLASLt " + v.text("cublaslt.version") + " has no FP8 GEMMs (11.11, CUDA " +
                 "11.8, added them) for " + label);
          }
          bool jit = false;
          if (!archs.empty() && !is_unknown(archs) && !arch_listed(archs, cc[0], cc[1], &jit)) {
            const std::string m = label + " has compute capability " +
                                  v.text(key + ".compute_capability") +
                                  ", not among the build's architectures (" + archs + ")";
            if (jit) {
              warn(m + ": its kernels are compiled from PTX at first use (slow start); rebuild "
                       "with CMAKE_CUDA_ARCHITECTURES including " +
                   std::to_string(cc[0] * 10 + cc[1]));
            } else {
              fail(m + ": shakedown's kernels cannot run on it; rebuild with "
                       "CMAKE_CUDA_ARCHITECTURES including " +
                   std::to_string(cc[0] * 10 + cc[1]));
            }
          }
        }
      }
      if (v.text(key + ".mig").starts_with("enabled") && !want.allow_mig) {
        fail(label + " has MIG enabled: a job gets slices of it, not the whole GPU (set "
                     "audit.allow_mig: true if slices are what the workload uses)");
      }
    }
  }
  if (nodes.empty()) return;
  if (!bad.empty()) {
    out.insert(out.end(), bad.begin(), bad.end());
    return;
  }
  if (gpu_nodes == 0) {
    // Nothing was compared: a SKIP, not a PASS (a check with nothing to judge never passes).
    out.push_back(run_finding("audit.compatibility", CheckStatus::kSkip,
                              "no node has a GPU (" + plural(nodes.size(), "node") +
                                  "): the CUDA driver, NCCL, FP8 and architecture rules do not "
                                  "apply"));
    return;
  }
  const NodeView& first = nodes.front();
  const std::string covered = "CUDA runtime " + first.text("cuda.runtime") +
                              " under the driver, NCCL " + first.text("nccl") + " against " +
                              first.text("build.nccl") +
                              ", FP8, the build's architectures and MIG on " +
                              plural(gpus, "GPU") + " of " + plural(gpu_nodes, "node");
  out.push_back(run_finding("audit.compatibility", CheckStatus::kPass,
                            plural(nodes.size(), "node") + " compatible: " + covered));
}

// ---- audit.drift ----

// Keys that differ between healthy nodes by nature: what the job was given on each.
bool drift_exempt(const std::string& key) { return key.starts_with("visible."); }

// Settings a site may change on purpose: a difference warns; the rest fails.
bool setting_key(const std::string& key) {
  return key.starts_with("nccl.") || key.starts_with("thp.") || key == "cpu.governor" ||
         key.starts_with("hugepages.");
}

// Memory totals of identical nodes differ by firmware reservations: within 1% is the same.
std::string normalise(const std::string& key, const std::string& value, double median) {
  if (key != "memory.GiB" || median <= 0) return value;
  const double v = std::strtod(value.c_str(), nullptr);
  return std::fabs(v - median) <= 0.01 * median ? "about " + general_text(median, 4) : value;
}

void drift(const std::vector<NodeView>& nodes, std::vector<Finding>& out) {
  if (nodes.size() < 2) {
    out.push_back(run_finding("audit.drift", CheckStatus::kSkip,
                              nodes.empty() ? "no node inventoried"
                                            : "1 node: nothing to compare it with (run on 2 or "
                                              "more nodes; a Slurm prolog checks one node "
                                              "against the config and platform only)"));
    return;
  }
  std::set<std::string> keys;
  for (const NodeView& v : nodes) {
    for (const auto& [k, value] : v.values) {
      if (!drift_exempt(k)) keys.insert(k);
    }
  }
  std::vector<Finding> found;
  std::size_t compared = 0;
  for (const std::string& key : keys) {
    double median = 0;
    if (key == "memory.GiB") {
      std::vector<double> all;
      for (const NodeView& v : nodes) all.push_back(std::strtod(v.text(key).c_str(), nullptr));
      std::sort(all.begin(), all.end());
      median = all[all.size() / 2];
    }
    std::map<std::string, std::vector<const NodeView*>> groups;
    std::vector<const NodeView*> unknown;
    for (const NodeView& v : nodes) {
      const std::string* value = v.get(key);
      if (value != nullptr && is_unknown(*value)) {
        unknown.push_back(&v);
        continue;
      }
      groups[value == nullptr ? "(not set)" : normalise(key, *value, median)].push_back(&v);
    }
    ++compared;
    if (groups.size() < 2) continue;
    // The majority's value; on a tie, the value of the lowest-numbered node.
    const auto majority = std::max_element(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
      if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
      return a.second.front()->index > b.second.front()->index;
    });
    const bool tie = std::count_if(groups.begin(), groups.end(), [&](const auto& g) {
                       return g.second.size() == majority->second.size();
                     }) > 1;
    const auto who_of = [](const std::vector<const NodeView*>& members) {
      std::vector<std::string> names;
      for (const NodeView* m : members) names.push_back(m->name);
      const std::size_t shown = std::min<std::size_t>(names.size(), 4);
      std::string who = join(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(shown)), ", ");
      if (names.size() > shown) who += " and " + std::to_string(names.size() - shown) + " more";
      return who;
    };
    const auto source_of = [&key](const NodeView* v) {
      const auto source = v->sources.find(key);
      return "read from " + (source != v->sources.end() ? source->second
                                                        : std::string("(not set on these nodes)"));
    };
    const auto drift_finding = [&key] {
      Finding f;
      f.check = "audit.drift";
      f.status = setting_key(key) ? CheckStatus::kWarn : CheckStatus::kFail;
      f.subject_kind = "field";
      f.subject = key;
      return f;
    };
    if (tie) {
      // No majority (2 nodes that differ, or as many on each side): the run cannot tell which
      // is off, so it names no node and drains none.
      std::vector<std::string> sides;
      for (const auto& [value, members] : groups) sides.push_back(who_of(members) + " " + value);
      Finding f = drift_finding();
      f.value = static_cast<double>(groups.size());
      f.expected = 1;
      f.unit = "values";
      f.evidence = source_of(majority->second.front());
      f.message = key + ": " + join(sides, "; ") +
                  " (no majority: this run cannot tell which is off, so no node is named or "
                  "drained; compare them with a node known to be good)" +
                  (unknown.empty() ? "" : "; unknown on " + plural(unknown.size(), "node"));
      found.push_back(std::move(f));
      continue;
    }
    for (const auto& [value, members] : groups) {
      if (value == majority->first) continue;
      const std::string who = who_of(members);
      Finding f = drift_finding();
      f.value = static_cast<double>(members.size());
      f.expected = 0;
      f.unit = "nodes";
      if (members.size() == 1) {
        f.node = members.front()->index;
        f.host = members.front()->host;
      }
      f.evidence = source_of(members.front());
      const std::string reference =
          majority->second.size() == 1 ? majority->second.front()->name
                                       : plural(majority->second.size(), "node");
      f.message = key + ": " + reference + " " + majority->first + ", " + who + " " + value +
                  (unknown.empty() ? "" : "; unknown on " + plural(unknown.size(), "node"));
      found.push_back(std::move(f));
    }
  }
  if (!found.empty()) {
    out.insert(out.end(), found.begin(), found.end());
    return;
  }
  out.push_back(run_finding("audit.drift", CheckStatus::kPass,
                            plural(compared, "field") + " the same on all " +
                                plural(nodes.size(), "node") +
                                " (driver, CUDA, NCCL, MPI, UCX, kernel, OS, GPUs, NICs and "
                                "their firmware and rates, BIOS, hugepages, NUMA, settings, "
                                "container)"));
}

// ---- audit.settings ----

void settings(const std::vector<NodeView>& nodes, const RunFacts& facts,
              std::vector<Finding>& out) {
  const AuditConfig& want = facts.config.audit;
  // Groups of nodes with the same finding, so 1,000 nodes with NCCL_ALGO set give one line.
  std::map<std::string, std::vector<const NodeView*>> groups;
  std::map<std::string, CheckStatus> status;
  const auto note = [&](const NodeView& v, const std::string& text, CheckStatus s) {
    groups[text].push_back(&v);
    status[text] = s;
  };
  std::size_t ib_nodes = 0;
  for (const NodeView& v : nodes) {
    for (const std::string& var : costly_nccl_settings()) {
      const std::string key = "nccl." + var;
      if (v.get(key) == nullptr) continue;
      if (std::find(want.allow_nccl.begin(), want.allow_nccl.end(), var) != want.allow_nccl.end()) {
        continue;
      }
      note(v,
           var + "=" + v.text(key) + " is set (" + v.sources.at(key) +
               "): it overrides NCCL's own choice of algorithm, protocol, channels or transport, "
               "and costs bandwidth when left from an experiment; unset it, or list it in "
               "audit.allow_nccl if it is meant",
           CheckStatus::kWarn);
    }
    bool roce = false;
    for (const auto& [key, value] : v.matching("nic.", ".link_layer")) {
      if (value == "Ethernet") roce = true;
    }
    if (roce && v.get("nccl.NCCL_IB_GID_INDEX") == nullptr) {
      note(v,
           "RoCE ports (link layer Ethernet) without NCCL_IB_GID_INDEX: NCCL may pick a GID "
           "that routes badly or not at all; set NCCL_IB_GID_INDEX (often 3, RoCE v2 over "
           "IPv4: see show_gids)",
           CheckStatus::kWarn);
    }
    if (v.has_ib()) ++ib_nodes;
    if (v.gpu_count() > 0 && v.has_ib() && v.text("gpu.kernel_module") != "open" &&
        v.text("gdr.nvidia_peermem") != "loaded") {
      note(v,
           "GPUDirect RDMA is not available (neither the open NVIDIA kernel module's dma-buf "
           "path nor nvidia_peermem): NCCL stages GPU data through host memory; load "
           "nvidia_peermem or use the open kernel module",
           CheckStatus::kWarn);
    }
    if (v.text("pcie.acs").starts_with("enabled")) {
      note(v,
           "PCIe ACS is " + v.text("pcie.acs") +
               ": peer-to-peer traffic between GPUs and NICs is redirected through the root "
               "complex; disable ACS on those bridges (BIOS or setpci)",
           CheckStatus::kWarn);
    }
    if (!want.governor.empty() && v.known("cpu.governor") && v.text("cpu.governor") != want.governor) {
      note(v,
           "CPU frequency governor " + v.text("cpu.governor") + ", not " + want.governor +
               " (audit.governor): CPU-side work (NCCL proxies, data loading) runs at lower "
               "clocks; set it with cpupower frequency-set -g " + want.governor,
           CheckStatus::kWarn);
    }
    if (v.text("slurm.topology_conf") == "absent" && nodes.size() > 1) {
      note(v,
           "Slurm has no topology.conf (" + v.sources.at("slurm.topology_conf") +
               "): it cannot place jobs by switch, and placement.leaf_switches has no switches "
               "to check; describe the fabric with TopologyPlugin=topology/tree",
           CheckStatus::kWarn);
    }
  }
  if (!groups.empty()) {
    for (const auto& [text, members] : groups) {
      Finding f;
      f.check = "audit.settings";
      f.status = status[text];
      f.value = static_cast<double>(members.size());
      f.unit = "nodes";
      std::vector<std::string> names;
      for (const NodeView* m : members) names.push_back(m->name);
      if (members.size() == 1) {
        f.subject_kind = "node";
        f.subject = "node " + std::to_string(members.front()->index);
        f.node = members.front()->index;
        f.host = members.front()->host;
        f.message = names.front() + ": " + text;
      } else {
        f.subject_kind = "nodes";
        f.subject = plural(members.size(), "node");
        const std::size_t shown = std::min<std::size_t>(names.size(), 3);
        f.message = (members.size() == nodes.size() ? "every node (" + plural(members.size(), "node") + ")"
                                                     : join(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(shown)), ", ") +
                                                           (names.size() > shown ? " and " + std::to_string(names.size() - shown) + " more" : "")) +
                    ": " + text;
      }
      out.push_back(std::move(f));
    }
    return;
  }
  std::size_t acs_known = 0, acs_applies = 0, governor_known = 0;
  for (const NodeView& v : nodes) {
    if (v.get("pcie.acs") != nullptr) ++acs_applies;
    if (v.known("pcie.acs")) ++acs_known;
    if (v.known("cpu.governor")) ++governor_known;
  }
  std::vector<std::string> parts = {"no NCCL setting that costs bandwidth (" +
                                    std::to_string(costly_nccl_settings().size()) + " watched)"};
  parts.push_back(ib_nodes == 0 ? "no InfiniBand or RoCE NIC (GPUDirect RDMA and RoCE GIDs did "
                                  "not apply)"
                                : "GPUDirect RDMA and RoCE GIDs in order on " +
                                      plural(ib_nodes, "node") + " with InfiniBand or RoCE");
  parts.push_back(acs_applies == 0 ? "ACS did not apply (no node with GPUs and NICs on PCIe)"
                                   : "ACS off on " + std::to_string(acs_known) + " of " +
                                         plural(acs_applies, "node") + " where it applies");
  parts.push_back(want.governor.empty()
                      ? "CPU governor not checked (audit.governor empty)"
                      : governor_known == 0
                            ? "CPU governor unknown (no cpufreq)"
                            : "CPU governor " + want.governor + " on " +
                                  std::to_string(governor_known) + " of " +
                                  plural(nodes.size(), "node") + " (unknown on the rest)");
  if (governor_known == nodes.size() && !want.governor.empty()) {
    parts.back() = "CPU governor " + want.governor + " on every node";
  }
  out.push_back(run_finding("audit.settings", CheckStatus::kPass, join(parts, "; ")));
}

// ---- audit.visibility ----

long count_of(const std::string& text) {
  // "0,1,2,3" or "4 GPU(s)"
  if (text.find(',') != std::string::npos) {
    return static_cast<long>(split_text(text, ',').size());
  }
  const std::vector<long> p = version_parts(text);
  if (text.find("GPU") != std::string::npos && !p.empty()) return p.front();
  return p.empty() ? -1 : 1;
}

void visibility(const std::vector<NodeView>& nodes, const RunFacts& facts,
                std::vector<Finding>& out) {
  int expected = facts.config.topology.expected_gpus_per_node;
  std::string from = "topology.expected_gpus_per_node";
  bool platform_count = false;
  if (expected <= 0 && facts.platform && facts.platform->gpus_per_node > 0) {
    expected = facts.platform->gpus_per_node;
    from = "platform " + facts.platform->name;
    platform_count = true;
  }
  // With virtual nodes every pretend node reports its host's GPUs: count each host once.
  std::vector<Finding> bad;
  std::size_t total = 0;
  std::size_t count_applied = 0;  // nodes held to the expected count
  for (const NodeView& v : nodes) {
    const int cuda = v.gpu_count();
    total += static_cast<std::size_t>(cuda);
    const long pci = v.known("gpu.pci_count") ? std::stol(v.text("gpu.pci_count")) : -1;
    const std::string cvd = v.text("visible.cuda_devices");
    const bool restricted = !cvd.empty() && cvd != "(not set)";
    if (pci > cuda && !restricted) {
      bad.push_back(node_finding(
          v, "audit.visibility", CheckStatus::kFail,
          "CUDA sees " + plural(static_cast<std::size_t>(cuda), "GPU") + " of the " +
              std::to_string(pci) +
              " NVIDIA GPUs on the PCI bus, with nothing hiding them (CUDA_VISIBLE_DEVICES "
              "unset): a GPU has fallen off or its driver state is bad (" +
              (v.inv->gpu_note.empty() ? std::string("check nvidia-smi and dmesg for Xid")
                                       : v.inv->gpu_note) +
              "); drain the node"));
    }
    const long have = pci >= 0 ? std::max<long>(pci, cuda) : cuda;
    // A platform's count is for nodes of its kind: a node without any GPU is not one (and
    // platform.match says so); a count the config asks for holds everywhere.
    const bool holds = expected > 0 && (!platform_count || have > 0);
    if (holds) ++count_applied;
    if (holds && have < expected) {
      bad.push_back(node_finding(v, "audit.visibility", CheckStatus::kFail,
                                 "has " + plural(static_cast<std::size_t>(have), "GPU") +
                                     ", expected " + std::to_string(expected) + " (" + from +
                                     "): check the node with nvidia-smi and drain it if a GPU "
                                     "is missing"));
    } else if (holds && have > expected) {
      bad.push_back(node_finding(v, "audit.visibility", CheckStatus::kWarn,
                                 "has " + plural(static_cast<std::size_t>(have), "GPU") +
                                     ", expected " + std::to_string(expected) + " (" + from + ")"));
    }
    if (const std::string slurm = v.text("visible.slurm_gpus"); !slurm.empty()) {
      const long given = count_of(slurm);
      if (given >= 0 && given != cuda) {
        bad.push_back(node_finding(
            v, "audit.visibility", CheckStatus::kWarn,
            "Slurm gave the job " + slurm + " (" + v.sources.at("visible.slurm_gpus") +
                ") but CUDA sees " + plural(static_cast<std::size_t>(cuda), "GPU") +
                (restricted ? " (CUDA_VISIBLE_DEVICES=" + cvd + ")" : "") +
                ": the GRES binding and the devices the job can use disagree"));
      }
    }
  }
  if (!bad.empty()) {
    out.insert(out.end(), bad.begin(), bad.end());
    return;
  }
  out.push_back(run_finding(
      "audit.visibility", CheckStatus::kPass,
      (total == 0 ? std::string("no GPU on any node, none on the PCI bus")
                  : plural(total, "GPU") + " visible, every one on the PCI bus seen by CUDA") +
          (expected > 0 && count_applied > 0
               ? ", " + std::to_string(expected) + " per node as " + from + " expects"
           : expected > 0 ? ", " + from + "'s " + std::to_string(expected) +
                                " per node not applied: no node has a GPU (platform.match says "
                                "whether the platform fits)"
                          : ", no count expected (topology.expected_gpus_per_node or a "
                            "platform's audit.gpus_per_node)") +
          "; " + plural(nodes.size(), "node")));
}

// ---- audit.nics ----

void nics(const std::vector<NodeView>& nodes, const RunFacts& facts, std::vector<Finding>& out) {
  double want = facts.config.audit.nic_rate_gbps;
  std::string from = "audit.nic_rate_gbps";
  if (want <= 0 && facts.platform && facts.platform->nic_rate_gbps > 0) {
    want = facts.platform->nic_rate_gbps;
    from = "platform " + facts.platform->name;
  }
  std::vector<Finding> bad;
  std::size_t ports = 0;
  for (const NodeView& v : nodes) {
    for (const auto& [key, state] : v.matching("nic.", ".state")) {
      ++ports;
      const std::string port = key.substr(4, key.size() - 4 - 6);  // mlx5_0.port1
      // "4: ACTIVE"
      if (!is_unknown(state) && state.find("ACTIVE") == std::string::npos) {
        bad.push_back(node_finding(v, "audit.nics", CheckStatus::kFail,
                                   port + " is " + state + ", not ACTIVE: check the cable, the "
                                          "switch port and the subnet manager"));
        continue;
      }
      const std::string rate = v.text("nic." + port + ".rate");
      const std::vector<long> gbps = version_parts(rate);
      if (want > 0 && !gbps.empty() && static_cast<double>(gbps.front()) < want) {
        bad.push_back(node_finding(v, "audit.nics", CheckStatus::kFail,
                                   port + " trained at " + rate + ", below " +
                                       general_text(want, 3) + " Gb/s (" + from +
                                       "): a degraded link (cable, transceiver or width)"));
      }
    }
  }
  if (!bad.empty()) {
    out.insert(out.end(), bad.begin(), bad.end());
    return;
  }
  out.push_back(run_finding(
      "audit.nics", ports == 0 ? CheckStatus::kSkip : CheckStatus::kPass,
      ports == 0 ? "no InfiniBand or RoCE port on any node (/sys/class/infiniband): nothing to check"
                 : plural(ports, "port") + " ACTIVE" +
                       (want > 0 ? " at " + general_text(want, 3) + " Gb/s or more (" + from + ")"
                                 : " (no rate expected: audit.nic_rate_gbps or a platform's)") +
                       " on " + plural(nodes.size(), "node")));
}

// ---- audit.container ----

void container(const std::vector<NodeView>& nodes, const RunFacts& facts,
               std::vector<Finding>& out) {
  const std::string& image = facts.config.audit.image;
  std::map<std::string, std::size_t> where;
  std::vector<Finding> bad;
  for (const NodeView& v : nodes) {
    const std::string runtime = v.text("container.runtime");
    const std::string img = v.text("container.image");
    const std::string text = runtime.empty() ? "unknown"
                             : runtime == "none"
                                 ? "the bare host"
                                 : runtime + (img.empty() || is_unknown(img) ? "" : " image " + img);
    ++where[text];
    if (!image.empty() && (runtime == "none" || img.find(image) == std::string::npos)) {
      bad.push_back(node_finding(v, "audit.container", CheckStatus::kFail,
                                 "runs on " + text + ", not in the image audit.image names (" +
                                     image + "): validate inside the image the workload uses"));
    }
  }
  if (!bad.empty()) {
    out.insert(out.end(), bad.begin(), bad.end());
    return;
  }
  std::vector<std::string> parts;
  for (const auto& [text, n] : where) parts.push_back(plural(n, "node") + " on " + text);
  out.push_back(run_finding("audit.container", CheckStatus::kPass,
                            join(parts, ", ") +
                                (image.empty() ? std::string(" (no image required: audit.image)")
                                               : " (" + image + ", as audit.image asks)")));
}

// ---- audit.coverage ----

void coverage(const std::vector<NodeView>& nodes, std::vector<Finding>& out) {
  std::map<std::string, std::vector<std::string>> unknown;  // key -> nodes
  std::size_t facts = 0, read = 0, without = 0;
  for (const NodeView& v : nodes) {
    if (v.inv->facts.empty()) ++without;
    for (const NodeFact& f : v.inv->facts) {
      ++facts;
      if (is_unknown(f.value)) {
        unknown[f.key].push_back("node " + std::to_string(v.index));
      } else {
        ++read;
      }
    }
  }
  Finding f = run_finding("audit.coverage", CheckStatus::kPass, "");
  f.value = static_cast<double>(read);
  f.expected = static_cast<double>(facts);
  f.unit = "facts";
  if (nodes.empty()) {
    f.status = CheckStatus::kFail;
    f.message = "no node was inventoried: nothing was audited";
  } else if (without == nodes.size()) {
    f.status = CheckStatus::kSkip;
    f.message = "the inventory holds no audit facts (/inventory/facts: a file written before "
                "the audit existed): only the fixed fields were compared";
  } else if (read == 0) {
    f.status = CheckStatus::kFail;
    f.message = "nothing could be read on any node (every fact unknown): the audit checked "
                "nothing; run it where /sys and /proc are visible";
  } else {
    std::vector<std::string> parts;
    for (const auto& [key, who] : unknown) {
      parts.push_back(key + " on " + (who.size() == nodes.size() ? "every node" : join(who, ", ")));
    }
    f.message = std::to_string(read) + " of " + std::to_string(facts) + " facts read on " +
                plural(nodes.size(), "node") +
                (parts.empty() ? std::string()
                               : "; unknown: " + join_limited(parts, "; ", 6) +
                                     " (shakedown summary --detail lists every fact and where it "
                                     "was read)");
  }
  out.push_back(std::move(f));
}

}  // namespace

std::optional<int> compare_versions(const std::string& a, const std::string& b) {
  const std::vector<long> x = version_parts(a), y = version_parts(b);
  if (x.empty() || y.empty()) return std::nullopt;
  for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const long xi = i < x.size() ? x[i] : 0, yi = i < y.size() ? y[i] : 0;
    if (xi != yi) return xi < yi ? -1 : 1;
  }
  return 0;
}

std::vector<Finding> audit_findings(const std::vector<NodeInventory>& nodes, const RunFacts& facts) {
  const std::vector<NodeView> v = views(nodes, facts);
  std::vector<Finding> out;
  compatibility(v, facts, out);
  drift(v, out);
  settings(v, facts, out);
  visibility(v, facts, out);
  nics(v, facts, out);
  container(v, facts, out);
  coverage(v, out);
  return out;
}

std::vector<Finding> audit_checks(const RunFile& file, const RunFacts& facts) {
  if (!facts.asked_for("inventory")) return {};
  const std::vector<NodeInventory> nodes = file.inventory();
  if (nodes.empty()) return {};  // inventory.coverage says so
  return audit_findings(nodes, facts);
}

}  // namespace shakedown
