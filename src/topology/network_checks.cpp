#include "topology/network_checks.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/strings.hpp"
#include "topology/placement.hpp"

namespace shakedown {
namespace {

// One physical node of the job: its name in Slurm (or its hostname) and where it sits.
struct JobNode {
  std::string name;
  std::string group;        // leaf switch or block, "" unknown
  bool from_slurm = false;  // the leaf switch came from SLURM_TOPOLOGY_ADDR
};

// The job's physical nodes by name, in rank order of first appearance. Virtual nodes and the
// ranks of one host collapse into one.
std::vector<JobNode> job_nodes(const std::vector<RankInfo>& ranks, bool leaf) {
  std::vector<JobNode> nodes;
  std::map<std::string, std::size_t> seen;
  for (const auto& r : ranks) {
    const std::string name = network_node_name(r);
    if (seen.count(name)) continue;
    seen.emplace(name, nodes.size());
    JobNode n{name, leaf ? r.leaf_switch : r.block, false};
    if (leaf) {
      n.from_slurm = !parse_slurm_topology_addr(r.slurm_topology_addr, r.slurm_topology_pattern)
                          .leaf_switch.empty();
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// "leaf0: 10 nodes, leaf1: 3" with the largest groups first.
std::string group_counts(const std::map<std::string, std::size_t>& counts) {
  std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> items;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    items.push_back(sorted[i].first + ": " +
                    (i == 0 ? plural(sorted[i].second, "node") : std::to_string(sorted[i].second)));
  }
  return join_limited(items, ", ");
}

std::vector<std::string> names_of(const std::vector<const JobNode*>& nodes) {
  std::vector<std::string> out;
  for (const auto* n : nodes) out.push_back(n->name);
  return out;
}

CheckResult make(std::string_view name, CheckStatus status, std::string reason) {
  return CheckResult{std::string(name), status, std::move(reason)};
}

}  // namespace

CheckResult check_leaf_switches(const std::vector<RankInfo>& ranks, const NetworkMap* map) {
  const std::vector<JobNode> nodes = job_nodes(ranks, true);
  const bool file_leaves = map != nullptr && !map->leaf_switches().empty();
  std::map<std::string, std::size_t> counts;
  std::vector<const JobNode*> unknown;
  std::size_t from_slurm = 0;
  std::vector<std::string> disagree;
  for (const auto& n : nodes) {
    if (n.group.empty()) {
      unknown.push_back(&n);
      continue;
    }
    ++counts[n.group];
    if (n.from_slurm) {
      ++from_slurm;
      if (file_leaves) {
        const NodeGroup* listed = map->leaf_switch_of(n.name);
        if (listed != nullptr && listed->name != n.group) {
          disagree.push_back("node " + n.name + ": Slurm says leaf switch " + n.group + ", " +
                             map->source() + ":" + std::to_string(listed->line) + " says " +
                             listed->name);
        }
      }
    }
  }
  const bool under_slurm = std::any_of(ranks.begin(), ranks.end(),
                                       [](const RankInfo& r) { return !r.slurm_job_id.empty(); });
  if (counts.empty()) {
    std::string reason =
        "no leaf switch known for the job's " + plural(nodes.size(), "node") + ": ";
    reason += under_slurm ? "Slurm names switches in SLURM_TOPOLOGY_ADDR only with "
                            "TopologyPlugin=topology/tree"
                          : "not launched by Slurm (SLURM_TOPOLOGY_ADDR)";
    reason += file_leaves ? ", and " + map->source() + " lists none of them under a SwitchName"
                          : "; SwitchName=<leaf> Nodes=<hosts> lines in topology.blocks name them";
    return make(kCheckLeafSwitches, CheckStatus::kSkip, reason);
  }

  const std::size_t known = nodes.size() - unknown.size();
  const std::string file = map != nullptr ? map->source() : "the record";
  const std::string source = from_slurm == known ? "from Slurm"
                             : from_slurm == 0   ? "from " + file
                                                 : "from Slurm and " + file;
  // How many leaves the job needed: exact with the leaves' sizes from the file, else a lower
  // bound from the job itself (a leaf holds at least as many nodes as the job has on one).
  int needed = 0;
  std::string size_note;
  if (file_leaves) {
    std::vector<std::size_t> sizes;
    for (const auto& g : map->leaf_switches()) sizes.push_back(g.nodes.size());
    needed = fewest_groups(sizes, known);
    size_note = "leaf sizes from " + map->source();
  }
  if (needed == 0) {
    std::size_t most = 0;
    for (const auto& [leaf, n] : counts) most = std::max(most, n);
    needed = static_cast<int>((known + most - 1) / most);
    size_note = "a leaf switch holds at least " + plural(most, "node") +
                " (the most this job has on one); SwitchName lines in topology.blocks give "
                "exact sizes";
  }

  std::vector<std::string> warnings;
  const std::string spread = plural(known, "node") + " on " +
                             plural(counts.size(), "leaf switch", "leaf switches") + " (" +
                             group_counts(counts) + ", " + source + ")";
  if (static_cast<int>(counts.size()) > needed) {
    warnings.push_back("the job's " + spread + " where " + std::to_string(needed) +
                       " would hold them (" + size_note +
                       "): traffic between leaf switches crosses the spine and can slow the "
                       "collectives; ask Slurm for fewer: sbatch --switches=" +
                       std::to_string(needed) + "@<longest wait, e.g. 30:00>");
  }
  if (!unknown.empty()) {
    warnings.push_back(plural(unknown.size(), "node") + " without a known leaf switch (" +
                       join_limited(names_of(unknown), ", ") + ")" +
                       (file_leaves ? ": add them to SwitchName lines in " + map->source() : ""));
  }
  if (!disagree.empty()) {
    warnings.push_back(join_limited(disagree, "; ") + " (Slurm's view is used; fix the file)");
  }
  if (!warnings.empty()) {
    return make(kCheckLeafSwitches, CheckStatus::kWarn, join_limited(warnings, "; "));
  }
  return make(
      kCheckLeafSwitches, CheckStatus::kPass,
      spread + (counts.size() == 1 ? "" : ", the fewest that hold them (" + size_note + ")"));
}

CheckResult check_blocks(const std::vector<RankInfo>& ranks, const NetworkMap& map) {
  const std::vector<JobNode> nodes = job_nodes(ranks, false);
  std::map<std::string, std::size_t> counts;
  std::vector<const JobNode*> outside;
  for (const auto& n : nodes) {
    if (n.group.empty()) {
      outside.push_back(&n);
    } else {
      ++counts[n.group];
    }
  }
  if (counts.empty()) {
    return make(kCheckBlocks, CheckStatus::kWarn,
                "none of the job's " + plural(nodes.size(), "node") + " (" +
                    join_limited(names_of(outside), ", ") + ") is in a block of " + map.source() +
                    ": the file must name nodes as Slurm does (or by hostname)");
  }
  const std::size_t inside = nodes.size() - outside.size();
  std::vector<std::size_t> sizes;
  std::size_t largest = 0;
  for (const auto& g : map.blocks()) {
    sizes.push_back(g.nodes.size());
    largest = std::max(largest, g.nodes.size());
  }
  const int needed = fewest_groups(sizes, inside);
  const std::string spread = plural(inside, "node") + " in " + plural(counts.size(), "block") +
                             " (" + group_counts(counts) + ")";
  std::vector<std::string> warnings;
  if (static_cast<int>(counts.size()) > needed) {
    warnings.push_back(
        "the job's " + spread + " where " + std::to_string(needed) +
        " would hold them (blocks of " +
        (largest == 1 ? "1 node" : "up to " + plural(largest, "node")) + " in " + map.source() +
        "): ranks in different blocks talk over the network instead of NVLink; allocate whole "
        "blocks (Slurm >= 23.11 topology/block with --segment, or a node list per block)");
  }
  if (!outside.empty()) {
    warnings.push_back(plural(outside.size(), "node") + " in no block of " + map.source() + " (" +
                       join_limited(names_of(outside), ", ") + ")");
  }
  if (!warnings.empty())
    return make(kCheckBlocks, CheckStatus::kWarn, join_limited(warnings, "; "));
  return make(kCheckBlocks, CheckStatus::kPass,
              spread + (counts.size() == 1 ? "" : ", the fewest that hold them") + ", from " +
                  map.source());
}

}  // namespace shakedown
