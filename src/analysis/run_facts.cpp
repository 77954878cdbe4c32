#include "analysis/run_facts.hpp"

#include <algorithm>

#include "config/load.hpp"

namespace shakedown {

bool RunFacts::asked_for(const std::string& phase) const {
  return std::find(config.phases.begin(), config.phases.end(), phase) != config.phases.end();
}

std::string RunFacts::rank_name(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) {
      return "rank " + std::to_string(rank) + " (host " + r.hostname + ", node " +
             std::to_string(r.node_index) + ")";
    }
  }
  return "rank " + std::to_string(rank);
}

std::string RunFacts::node_name(int node) const {
  const std::string host = host_of_node(node);
  std::string out = "node " + std::to_string(node);
  if (!host.empty()) out += " (host " + host + (meta.virtual_nodes > 0 ? ", virtual" : "") + ")";
  return out;
}

std::string RunFacts::host_of_rank(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) return r.hostname;
  }
  return "";
}

std::string RunFacts::host_of_node(int node) const {
  for (const auto& r : ranks) {
    if (r.node_index == node) return r.hostname;
  }
  return "";
}

int RunFacts::node_of_rank(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) return r.node_index;
  }
  return -1;
}

RunFacts read_run_facts(const RunFile& file) {
  RunFacts f;
  f.meta = file.meta();
  try {
    f.config = load_config(f.meta.config_yaml, file.path().string() + ":/config_yaml");
    f.config_known = true;
  } catch (const Error&) {
    f.config = Config{};
  }
  f.ranks = file.ranks();
  f.placement = file.placement_checks();
  for (const auto& c : f.placement) {
    if (c.name == "placement.oversubscription" && c.status != CheckStatus::kPass &&
        c.status != CheckStatus::kSkip) {
      f.oversubscribed = true;
    }
  }
  return f;
}

}  // namespace shakedown
