#include "topology/network.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/host.hpp"
#include "core/strings.hpp"
#include "topology/hostlist.hpp"

namespace shakedown {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "gpu001.cluster.local" -> "gpu001"; IPv4 addresses (pretend hosts) stay whole.
std::string short_name(std::string_view name) {
  const bool dotted_number = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
  if (dotted_number) return std::string(name);
  return std::string(name.substr(0, name.find('.')));
}

struct KeyValue {
  std::string key;  // lower case
  std::string value;
};

}  // namespace

NetworkMap NetworkMap::parse(std::string_view text, const std::string& source) {
  NetworkMap map;
  map.source_ = source;
  std::istringstream in{std::string(text)};
  std::string raw;
  int line_no = 0;
  std::map<std::string, int> block_names, switch_names;  // lower-case name -> line
  std::map<std::string, std::pair<std::string, int>> block_of_node, leaf_of_node;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    std::string line = raw.substr(0, raw.find('#'));
    std::istringstream words(line);
    std::vector<KeyValue> kvs;
    std::string word;
    while (words >> word) {
      const std::size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError(where + "'" + word +
                         "' is not Key=Value (topology.conf syntax: BlockName=NAME Nodes=HOSTLIST "
                         "or SwitchName=NAME Nodes=HOSTLIST)");
      }
      kvs.push_back({lower(word.substr(0, eq)), word.substr(eq + 1)});
    }
    if (kvs.empty()) continue;
    const std::string& kind = kvs.front().key;
    if (kind == "blocksizes") continue;  // Slurm's aggregation sizes: nothing to check here
    if (kind != "blockname" && kind != "switchname") {
      throw UsageError(where + "unknown line kind '" + kvs.front().key +
                       "' (expected BlockName=, SwitchName= or BlockSizes=, as in Slurm's "
                       "topology.conf)");
    }
    const bool is_block = kind == "blockname";
    NodeGroup group;
    group.name = kvs.front().value;
    group.line = line_no;
    if (group.name.empty()) throw UsageError(where + kvs.front().key + "= needs a name");
    bool has_nodes = false, has_switches = false;
    for (std::size_t i = 1; i < kvs.size(); ++i) {
      if (kvs[i].key == "nodes") {
        if (kvs[i].value.empty()) throw UsageError(where + "Nodes= is empty");
        try {
          auto nodes = expand_hostlist(kvs[i].value);
          group.nodes.insert(group.nodes.end(), nodes.begin(), nodes.end());
        } catch (const std::invalid_argument& e) {
          throw UsageError(where + "Nodes=" + kvs[i].value + ": " + e.what());
        }
        has_nodes = true;
      } else if (kvs[i].key == "switches") {
        has_switches = true;
      } else if (is_block) {
        throw UsageError(where + "unknown key '" + kvs[i].key +
                         "' on a BlockName line (expected Nodes=)");
      }
      // Other SwitchName keys (LinkSpeed=, Level= as `scontrol show topology` prints) are ignored.
    }
    auto& names = is_block ? block_names : switch_names;
    if (auto [it, fresh] = names.emplace(lower(group.name), line_no); !fresh) {
      throw UsageError(where + (is_block ? "block '" : "switch '") + group.name +
                       "' is defined again (first on line " + std::to_string(it->second) + ")");
    }
    if (is_block && !has_nodes) {
      throw UsageError(where + "block '" + group.name + "' has no Nodes= list");
    }
    if (!is_block && !has_nodes) {
      if (!has_switches) {
        throw UsageError(where + "switch '" + group.name + "' has neither Nodes= nor Switches=");
      }
      continue;  // an upper-level switch: only leaf switches matter for placement
    }
    auto& owner = is_block ? block_of_node : leaf_of_node;
    auto& index = is_block ? map.block_index_ : map.leaf_index_;
    auto& groups = is_block ? map.blocks_ : map.leaf_switches_;
    for (const auto& node : group.nodes) {
      const std::string key = lower(node);
      if (auto [it, fresh] = owner.emplace(key, std::pair{group.name, line_no}); !fresh) {
        throw UsageError(where + "node " + node + " is already in " +
                         (is_block ? "block '" : "switch '") + it->second.first + "' (line " +
                         std::to_string(it->second.second) + "); a node belongs to one " +
                         (is_block ? "block" : "leaf switch"));
      }
      index.emplace(key, groups.size());
    }
    groups.push_back(std::move(group));
  }
  return map;
}

NetworkMap NetworkMap::read(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path);
  if (!in) {
    const std::string reason = std::strerror(errno);
    throw UsageError("topology.blocks: cannot read '" + path + "' on host " + local_hostname() +
                     " (" + reason +
                     "); every rank reads it, so it must be on every node like the config (a "
                     "shared file system), or set topology.blocks: \"\"");
  }
  std::stringstream text;
  text << in.rdbuf();
  NetworkMap map = parse(text.str(), path);
  if (map.empty()) {
    throw UsageError("topology.blocks: '" + path +
                     "' has no BlockName= or SwitchName=...Nodes= line; write one line per "
                     "NVLink domain, e.g. BlockName=nvl0 Nodes=gpu[001-018]");
  }
  return map;
}

const NodeGroup* NetworkMap::find(const std::vector<NodeGroup>& groups,
                                  const std::map<std::string, std::size_t>& index,
                                  std::string_view node) const {
  if (node.empty()) return nullptr;
  if (auto it = index.find(lower(node)); it != index.end()) return &groups[it->second];
  const std::string short_node = lower(short_name(node));
  for (const auto& [name, i] : index) {
    if (short_name(name) == short_node) return &groups[i];
  }
  return nullptr;
}

const NodeGroup* NetworkMap::block_of(std::string_view node) const {
  return find(blocks_, block_index_, node);
}

const NodeGroup* NetworkMap::leaf_switch_of(std::string_view node) const {
  return find(leaf_switches_, leaf_index_, node);
}

SlurmAddress parse_slurm_topology_addr(std::string_view addr, std::string_view pattern) {
  SlurmAddress out;
  if (addr.empty()) return out;
  const std::vector<std::string_view> a = split(addr, '.');
  const std::vector<std::string_view> p = split(pattern, '.');
  // The levels above the node are switches; a node name may itself contain dots.
  std::size_t switches = 0;
  while (switches < p.size() && p[switches] == "switch") ++switches;
  if (pattern.empty() || switches + 1 != p.size() || p.back() != "node" || a.size() <= switches) {
    out.node = std::string(addr);  // no usable pattern: the whole address names the node
    return out;
  }
  if (switches > 0) out.leaf_switch = std::string(a[switches - 1]);
  for (std::size_t i = switches; i < a.size(); ++i) {
    if (i > switches) out.node += '.';
    out.node += a[i];
  }
  return out;
}

std::string network_node_name(const RankInfo& r) {
  const SlurmAddress address =
      parse_slurm_topology_addr(r.slurm_topology_addr, r.slurm_topology_pattern);
  return address.node.empty() ? r.hostname : address.node;
}

void assign_network(std::vector<RankInfo>& ranks, const NetworkMap& map) {
  for (auto& r : ranks) {
    const std::string node = network_node_name(r);
    if (r.leaf_switch.empty()) {
      if (const NodeGroup* leaf = map.leaf_switch_of(node)) r.leaf_switch = leaf->name;
    }
    if (const NodeGroup* block = map.block_of(node)) r.block = block->name;
  }
}

std::vector<NetworkGroup> network_groups(const std::vector<RankInfo>& ranks, NetworkLevel level) {
  std::map<std::string, std::set<int>> groups;
  for (const auto& r : ranks) {
    const std::string& name = level == NetworkLevel::kLeafSwitch ? r.leaf_switch : r.block;
    if (!name.empty()) groups[name].insert(r.node_index);
  }
  std::vector<NetworkGroup> out;
  for (auto& [name, nodes] : groups) out.push_back({name, {nodes.begin(), nodes.end()}});
  return out;
}

int fewest_groups(std::vector<std::size_t> sizes, std::size_t nodes) {
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::size_t covered = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (covered >= nodes) return static_cast<int>(i);
    covered += sizes[i];
  }
  return covered >= nodes ? static_cast<int>(sizes.size()) : 0;
}

}  // namespace shakedown
