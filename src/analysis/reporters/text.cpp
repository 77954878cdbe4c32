#include "analysis/reporters/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "topology/cpu_list.hpp"

namespace shakedown {

namespace {

// A minimal column-aligned table: widths from the longest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<std::size_t> width(rows_.front().size(), 0);
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], row[c].size());
      }
    }
    std::ostringstream os;
    for (const auto& row : rows_) {
      std::string line;
      for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) {
        line += row[c];
        if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
      }
      os << "  " << line << '\n';
    }
    return os.str();
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string or_dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

std::string micro(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

}  // namespace

std::string format_topology_table(const std::vector<RankInfo>& ranks) {
  // Leaf switch and NVLink block only when the run knew them (Slurm topology, topology.blocks).
  const bool switches = std::any_of(ranks.begin(), ranks.end(),
                                    [](const RankInfo& r) { return !r.leaf_switch.empty(); });
  const bool blocks =
      std::any_of(ranks.begin(), ranks.end(), [](const RankInfo& r) { return !r.block.empty(); });
  std::vector<std::string> header = {"rank", "node", "local", "host", "cpus",
                                     "numa", "gpu",  "nic",   "slurm"};
  if (switches) header.push_back("switch");
  if (blocks) header.push_back("block");
  Table t(header);
  for (const auto& r : ranks) {
    std::string gpu = "-";
    if (r.gpu_index >= 0) {
      gpu = std::to_string(r.gpu_index) + " " + or_dash(r.gpu.pci_bus_id);
    } else if (!r.gpu_note.empty()) {
      gpu = "none";
    }
    std::string slurm = r.slurm_job_id.empty()
                            ? "-"
                            : "job " + r.slurm_job_id + " node " + or_dash(r.slurm_node_id) +
                                  " task " + or_dash(r.slurm_procid);
    std::vector<std::string> row = {std::to_string(r.rank),
                                    std::to_string(r.node_index),
                                    std::to_string(r.local_rank),
                                    r.hostname,
                                    or_dash(r.cpus),
                                    or_dash(r.numa),
                                    gpu,
                                    or_dash(r.nic),
                                    slurm};
    if (switches) row.push_back(or_dash(r.leaf_switch));
    if (blocks) row.push_back(or_dash(r.block));
    t.add(std::move(row));
  }
  std::string out = t.str();
  // Why there is no GPU is the same for every rank of a host in practice; say it once.
  std::vector<std::string> notes;
  for (const auto& r : ranks) {
    if (r.gpu_index < 0 && !r.gpu_note.empty() &&
        std::find(notes.begin(), notes.end(), r.gpu_note) == notes.end()) {
      notes.push_back(r.gpu_note);
    }
  }
  for (const auto& n : notes) out += "  gpu: none: " + n + '\n';
  return out;
}

std::string format_topology_compact(const std::vector<RankInfo>& ranks) {
  if (ranks.size() <= 16) return format_topology_table(ranks);
  struct NodeRow {
    std::string host;
    std::vector<int> ranks;
    int gpus = 0;
    std::vector<std::string> nics;
  };
  std::map<int, NodeRow> nodes;
  for (const auto& r : ranks) {
    NodeRow& n = nodes[r.node_index];
    n.host = r.hostname;
    n.ranks.push_back(r.rank);
    n.gpus += r.gpu_index >= 0 ? 1 : 0;
    if (!r.nic.empty() && std::find(n.nics.begin(), n.nics.end(), r.nic) == n.nics.end()) {
      n.nics.push_back(r.nic);
    }
  }
  if (nodes.size() > 16) {
    // Many nodes: one row per kind of node (ranks, GPUs, NICs), its nodes as index ranges.
    struct Kind {
      std::vector<int> nodes;
      std::string first_host, last_host;
      int ranks = 0;
    };
    std::map<std::tuple<std::size_t, int, std::string>, Kind> kinds;
    for (const auto& [index, n] : nodes) {
      std::string nics;
      for (const auto& nic : n.nics) nics += (nics.empty() ? "" : ",") + nic;
      Kind& k = kinds[{n.ranks.size(), n.gpus, nics}];
      if (k.nodes.empty()) k.first_host = n.host;
      k.last_host = n.host;
      k.nodes.push_back(index);
      k.ranks += static_cast<int>(n.ranks.size());
    }
    Table t({"nodes", "hosts", "ranks", "gpus", "nics"});
    for (const auto& [key, k] : kinds) {
      const auto& [per, gpus, nics] = key;
      t.add({format_cpu_list(k.nodes) + " (" + std::to_string(k.nodes.size()) + ")",
             k.first_host + (k.nodes.size() > 1 ? " .. " + k.last_host : ""),
             std::to_string(per) + " each (" + std::to_string(k.ranks) + ")",
             std::to_string(gpus) + " each", or_dash(nics)});
    }
    return t.str();
  }
  Table t({"node", "host", "ranks", "gpus", "nics"});
  for (const auto& [index, n] : nodes) {
    const auto [lo, hi] = std::minmax_element(n.ranks.begin(), n.ranks.end());
    std::string nics;
    for (const auto& nic : n.nics) nics += (nics.empty() ? "" : ",") + nic;
    t.add({std::to_string(index), n.host,
           std::to_string(n.ranks.size()) + " (" + std::to_string(*lo) + "-" + std::to_string(*hi) +
               ")",
           std::to_string(n.gpus), or_dash(nics)});
  }
  return t.str();
}

std::string format_inventory_compact(const std::vector<NodeInventory>& nodes) {
  // What makes two nodes alike: everything but their index and host name.
  std::vector<std::pair<std::string, std::vector<int>>> kinds;
  std::map<int, std::string> host;
  for (const auto& n : nodes) {
    host[n.node_index] = n.hostname;
    std::ostringstream os;
    os << or_dash(n.cpu_model) << ", " << n.cores << " cores, " << gib(n.memory_bytes) << ", ";
    if (n.gpus.empty()) {
      os << "no GPU";
    } else {
      std::map<std::string, int> models;
      for (const auto& g : n.gpus) ++models[g.name + " " + gib(g.memory_bytes)];
      bool first = true;
      for (const auto& [m, c] : models) {
        os << (first ? "" : ", ") << c << "x " << m;
        first = false;
      }
      if (!n.gpu_driver.empty()) os << " (driver " << n.gpu_driver << ")";
    }
    os << "; " << or_dash(n.os) << ", kernel " << or_dash(n.kernel) << "; mpi "
       << or_dash(n.mpi_version) << ", nccl " << or_dash(n.nccl_version) << ", cuda "
       << or_dash(n.cuda_runtime_version) << ", ucx " << or_dash(n.ucx_version);
    const std::string key = os.str();
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == key; });
    if (it == kinds.end()) {
      kinds.push_back({key, {}});
      it = kinds.end() - 1;
    }
    it->second.push_back(n.node_index);
  }
  std::ostringstream os;
  for (const auto& [key, list] : kinds) {
    std::string which = list.size() == 1 ? "node " + std::to_string(list.front()) + " (" +
                                               host.at(list.front()) + ")"
                                         : std::to_string(list.size()) + " nodes";
    if (list.size() > 1 && kinds.size() > 1) {
      std::string ids;
      for (std::size_t i = 0; i < list.size() && i < 8; ++i)
        ids += (i ? "," : "") + std::to_string(list[i]);
      which += " (" + ids + (list.size() > 8 ? ",..." : "") + ")";
    }
    os << "  " << which << (kinds.size() > 1 ? "" : (list.size() > 1 ? " alike" : "")) << ": "
       << key << '\n';
  }
  return os.str();
}

std::string status_label(CheckStatus status) {
  std::string label = to_string(status);
  std::transform(label.begin(), label.end(), label.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  return label;
}

std::string format_checks(const std::vector<CheckResult>& checks) {
  std::ostringstream os;
  for (const auto& c : checks) {
    os << "  [" << status_label(c.status) << "] " << c.name;
    if (!c.reason.empty()) os << ": " << c.reason;
    os << '\n';
  }
  return os.str();
}

std::string format_inventory(const std::vector<NodeInventory>& nodes) {
  std::ostringstream os;
  for (const auto& n : nodes) {
    os << "  node " << n.node_index << " (" << n.hostname << "): " << or_dash(n.cpu_model) << ", "
       << n.sockets << " sockets, " << n.cores << " cores, " << n.pus << " threads, "
       << n.numa_nodes << " NUMA, " << gib(n.memory_bytes) << "; " << or_dash(n.os) << ", kernel "
       << or_dash(n.kernel) << '\n';
    os << "    gpus: ";
    if (n.gpus.empty()) os << "none";
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const auto& g = n.gpus[i];
      os << (i ? "; " : "") << g.name << " " << g.pci_bus_id << " " << gib(g.memory_bytes);
    }
    if (!n.gpu_driver.empty()) os << " (driver " << n.gpu_driver << ")";
    os << "\n    nics: ";
    if (n.nics.empty()) os << "none";
    for (std::size_t i = 0; i < n.nics.size(); ++i) {
      os << (i ? ", " : "") << n.nics[i].name << " (" << n.nics[i].kind << ")";
    }
    os << "\n    versions: mpi " << or_dash(n.mpi_version) << "; nccl " << or_dash(n.nccl_version)
       << "; cuda runtime " << or_dash(n.cuda_runtime_version) << ", driver "
       << or_dash(n.cuda_driver_version) << "; hdf5 " << or_dash(n.hdf5_version) << "; ucx "
       << or_dash(n.ucx_version) << "; hwloc " << or_dash(n.hwloc_version) << "; openblas "
       << or_dash(n.openblas_version) << '\n';
    if (!n.facts.empty()) os << "    facts (what the audit checks, and where each was read):\n";
    for (const NodeFact& f : n.facts) {
      os << "      " << f.key << " = " << f.value << "  [" << f.source << "]\n";
    }
  }
  return os.str();
}

std::string format_run_meta(const RunMeta& m) {
  std::ostringstream os;
  os << "  status:    " << m.status << ", " << m.started_utc << " to " << or_dash(m.finished_utc)
     << '\n'
     << "  ranks:     " << m.world_size << " on " << m.node_count
     << (m.node_count == 1 ? " node" : " nodes")
     << (m.virtual_nodes > 1
             ? " (virtual: " + std::to_string(m.virtual_nodes) + " pretend nodes per host)"
             : "")
     << '\n'
     << "  backend:   " << or_dash(m.backend) << "; shakedown " << m.shakedown_version
     << " (schema " << m.schema_version << ")\n"
     << "  command:   " << m.command_line << '\n';
  return os.str();
}

std::string format_clock(const std::vector<double>& offset_us, const std::vector<double>& rtt_us) {
  if (offset_us.empty()) return "  (not measured)\n";
  if (offset_us.size() == 1) return "  one rank: nothing to align\n";
  std::size_t worst = 0;
  for (std::size_t r = 1; r < offset_us.size(); ++r) {
    if (std::fabs(offset_us[r]) > std::fabs(offset_us[worst])) worst = r;
  }
  std::size_t slowest = 0;
  for (std::size_t r = 1; r < rtt_us.size(); ++r) {
    if (rtt_us[r] > rtt_us[slowest]) slowest = r;
  }
  std::ostringstream os;
  os << "  largest offset from rank 0: " << micro(offset_us[worst]) << " (rank " << worst << ")";
  if (!rtt_us.empty()) {
    os << "; largest round trip: " << micro(rtt_us[slowest]) << " (rank " << slowest
       << "), so offsets are good to about +-" << micro(rtt_us[slowest] / 2);
  }
  os << '\n';
  return os.str();
}

}  // namespace shakedown
