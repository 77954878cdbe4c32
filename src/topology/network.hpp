#pragma once
// Where nodes sit in the fabric: the leaf switch each node hangs off and the NVLink block
// (NVL72-style domain) it belongs to. Slurm tells the leaf switch through SLURM_TOPOLOGY_ADDR /
// SLURM_TOPOLOGY_ADDR_PATTERN when it runs topology/tree; Debian's Slurm (22.05) predates block
// topology (23.11), so blocks, and switches outside Slurm, come from a file the user gives
// (`topology.blocks`), written in Slurm's own topology.conf syntax so a site's file serves as is:
//
//   # NVLink domains (Slurm >= 23.11 topology/block syntax)
//   BlockName=nvl0 Nodes=gpu[001-018]
//   BlockName=nvl1 Nodes=gpu[019-036]
//   # leaf switches (topology/tree syntax); upper levels (Switches= only) are accepted and ignored
//   SwitchName=leaf0 Nodes=gpu[001-024]
//   SwitchName=spine Switches=leaf[0-1]
//
// Pure: no MPI, no hwloc. The pairing schedules of the link scan can group nodes with
// network_groups().
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "topology/rank_info.hpp"

namespace shakedown {

// A named set of nodes from the file (a block or a leaf switch), with the line that defined it.
struct NodeGroup {
  std::string name;
  std::vector<std::string> nodes;
  int line = 0;
};

class NetworkMap {
 public:
  NetworkMap() = default;
  // Parses topology.conf-style text. `source` names it in errors ("FILE:LINE: ..."). Throws
  // UsageError for unknown line kinds, missing Nodes=, bad hostlists, duplicate names, or a
  // node listed in two blocks or under two leaf switches.
  static NetworkMap parse(std::string_view text, const std::string& source);
  // Reads `path` ("" -> an empty map). Throws UsageError naming topology.blocks, the file, this
  // host and the reason when it cannot be read.
  static NetworkMap read(const std::string& path);

  const std::string& source() const { return source_; }
  const std::vector<NodeGroup>& blocks() const { return blocks_; }
  const std::vector<NodeGroup>& leaf_switches() const { return leaf_switches_; }
  bool empty() const { return blocks_.empty() && leaf_switches_.empty(); }

  // The group a node belongs to, nullptr when none. Names compare case-insensitively, and a
  // host's short name matches ("gpu001.cluster.local" finds "gpu001").
  const NodeGroup* block_of(std::string_view node) const;
  const NodeGroup* leaf_switch_of(std::string_view node) const;

 private:
  const NodeGroup* find(const std::vector<NodeGroup>& groups,
                        const std::map<std::string, std::size_t>& index,
                        std::string_view node) const;

  std::string source_;
  std::vector<NodeGroup> blocks_, leaf_switches_;
  std::map<std::string, std::size_t> block_index_, leaf_index_;  // lower-case node -> group
};

// SLURM_TOPOLOGY_ADDR split by SLURM_TOPOLOGY_ADDR_PATTERN: "spine.leaf3.gpu017" with
// "switch.switch.node" -> leaf switch "leaf3", node "gpu017". Without a switch level (no topology
// plugin: ADDR=<node>, PATTERN=node) the leaf switch is "". Empty when ADDR is empty.
struct SlurmAddress {
  std::string leaf_switch;
  std::string node;
};
SlurmAddress parse_slurm_topology_addr(std::string_view addr, std::string_view pattern);

// The name a rank's node goes by in Slurm and in the map: the node from SLURM_TOPOLOGY_ADDR,
// else the hostname.
std::string network_node_name(const RankInfo& r);

// Fills each rank's leaf_switch (when Slurm did not) and block from the map.
void assign_network(std::vector<RankInfo>& ranks, const NetworkMap& map);

// Node indices grouped by leaf switch or by block, groups in name order, indices ascending;
// nodes without one are left out.
enum class NetworkLevel { kLeafSwitch, kBlock };
struct NetworkGroup {
  std::string name;
  std::vector<int> node_indices;
};
std::vector<NetworkGroup> network_groups(const std::vector<RankInfo>& ranks, NetworkLevel level);

// Fewest groups (largest first) whose sizes add up to at least `nodes`; 0 when they cannot.
int fewest_groups(std::vector<std::size_t> sizes, std::size_t nodes);

}  // namespace shakedown
